// Decodes, with Apache Kafka's own PasswordEncoder, a password tidelog stored in
// ZooKeeper: args are password.encoder.secret and the stored value; prints the password.
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.security.PasswordEncoder;

public class KafkaPasswordDecoder {
    public static void main(String[] args) throws Exception {
        PasswordEncoder encoder =
            PasswordEncoder.encrypting(new Password(args[0]), null, "AES/CBC/PKCS5Padding", 128, 4096);
        System.out.println(encoder.decode(args[1]).value());
    }
}
