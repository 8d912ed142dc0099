import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Apache Kafka's own Java producer as S8's second client, the twin of loadgen.PacedProducer:
 * an idempotent acks=all producer sends a 1 KiB record to partition 0 of a topic about every
 * millisecond until its standard input closes, then flushes and exits.
 *
 * <p>Run as {@code java -cp '<kafka libs>/*' PacedProducer.java BOOTSTRAP TOPIC}. Prints one
 * line per acknowledged record, {@code <sent ns> <acknowledged ns>} (System.nanoTime, which
 * on Linux reads CLOCK_MONOTONIC, the clock of Python's time.perf_counter), and
 * {@code failed <error>} for a record the producer gave up on. Every other setting is the
 * producer's default, as a Java application gets it.
 */
public class PacedProducer {
    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        config.put("bootstrap.servers", args[0]);
        config.put("acks", "all");
        config.put("enable.idempotence", "true");
        config.put("linger.ms", "5");
        config.put("batch.size", "65536");
        config.put("delivery.timeout.ms", "300000");
        config.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        config.put(
                "value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        byte[] value = new byte[1024];
        Random random = new Random();
        for (int i = 0; i < value.length; i++) {
            value[i] = (byte) ('A' + random.nextInt(26));
        }
        BufferedWriter out =
                new BufferedWriter(
                        new OutputStreamWriter(
                                new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8));
        AtomicBoolean done = new AtomicBoolean();
        Thread stdin =
                new Thread(
                        () -> {
                            try {
                                while (System.in.read() >= 0) {}
                            } catch (IOException ignored) {
                                // a closed pipe ends the run like end of input
                            }
                            done.set(true);
                        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config)) {
            while (!done.get()) {
                long sent = System.nanoTime();
                producer.send(
                        new ProducerRecord<>(args[1], 0, null, value),
                        (metadata, error) ->
                                print(out, error == null ? acknowledged(sent) : "failed " + error));
                Thread.sleep(1);
            }
        }
        out.flush();
    }

    private static String acknowledged(long sent) {
        return sent + " " + System.nanoTime();
    }

    private static void print(BufferedWriter out, String line) {
        synchronized (out) {
            try {
                out.write(line);
                out.newLine();
                out.flush();
            } catch (IOException error) {
                throw new UncheckedIOException(error);
            }
        }
    }
}
