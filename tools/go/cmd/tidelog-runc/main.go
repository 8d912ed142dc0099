// Command tidelog-runc is an OCI runtime for a Docker engine on a machine whose
// capability bounding set lacks some capabilities: it removes from the container's
// OCI spec every capability that the bounding set does not hold, then runs the real
// runc with the same arguments.
//
// Why: `docker run --privileged` asks for every capability the engine knows. Where the
// machine's bounding set (CapBnd in /proc/self/status) lacks one, CAP_SYS_RESOURCE
// for example, runc fails with "unable to apply caps: operation not permitted", and
// kind, which starts every node privileged, cannot start a cluster. No container can
// hold a capability outside the bounding set anyway, so dropping those asks for
// exactly what the machine can grant.
//
// Two places carry capabilities: the bundle's config.json (process.capabilities, read
// by `runc create` and `runc run`, found through --bundle, default the working
// directory) and the process file of `runc exec --process FILE` (which `docker exec`
// uses). Every other call passes through unchanged.
//
// The real runc is the path set at build time with
// -ldflags "-X main.realRuntime=/usr/sbin/runc"; tools/images/dockerd.sh builds this
// program and registers it with the engine it starts (--add-runtime, --default-runtime)
// only on machines that need it.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// realRuntime is the runc that does the work; set with -ldflags at build time.
var realRuntime = "/usr/sbin/runc"

// capabilityBits maps Linux capability names to their bit in the capability sets
// (linux/capability.h).
var capabilityBits = map[string]uint{
	"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2, "CAP_FOWNER": 3,
	"CAP_FSETID": 4, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
	"CAP_LINUX_IMMUTABLE": 9, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_BROADCAST": 11,
	"CAP_NET_ADMIN": 12, "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_IPC_OWNER": 15,
	"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_CHROOT": 18, "CAP_SYS_PTRACE": 19,
	"CAP_SYS_PACCT": 20, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22, "CAP_SYS_NICE": 23,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_SYS_TTY_CONFIG": 26, "CAP_MKNOD": 27,
	"CAP_LEASE": 28, "CAP_AUDIT_WRITE": 29, "CAP_AUDIT_CONTROL": 30, "CAP_SETFCAP": 31,
	"CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33, "CAP_SYSLOG": 34, "CAP_WAKE_ALARM": 35,
	"CAP_BLOCK_SUSPEND": 36, "CAP_AUDIT_READ": 37, "CAP_PERFMON": 38, "CAP_BPF": 39,
	"CAP_CHECKPOINT_RESTORE": 40,
}

// capabilitySets are the keys of an OCI process's "capabilities" object.
var capabilitySets = []string{"bounding", "effective", "inheritable", "permitted", "ambient"}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "tidelog-runc: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if path, pointer := specToEdit(args); path != "" {
		bounding, err := boundingSet()
		if err != nil {
			return err
		}
		if err := dropCapabilities(path, pointer, bounding); err != nil {
			return err
		}
	}
	return syscall.Exec(realRuntime, append([]string{realRuntime}, args...), os.Environ())
}

// specToEdit returns the JSON file that carries the capabilities of this call, and the
// path of object keys from its root to the process object; "" when there is none.
func specToEdit(args []string) (string, []string) {
	command, rest := subcommand(args)
	switch command {
	case "create", "run":
		bundle := flagValue(rest, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return filepath.Join(bundle, "config.json"), []string{"process"}
	case "exec":
		if process := flagValue(rest, "--process", "-p"); process != "" {
			return process, nil
		}
	}
	return "", nil
}

// globalFlagsWithValue are runc's global flags that take a separate value.
var globalFlagsWithValue = map[string]bool{
	"--root": true, "--log": true, "--log-format": true, "--criu": true,
	"--rootless": true,
}

// subcommand splits runc's arguments into the command name and what follows it.
func subcommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			return arg, args[i+1:]
		}
		if globalFlagsWithValue[arg] {
			i++
		}
	}
	return "", nil
}

// flagValue is the value of the first of names in args, as "--name value" or
// "--name=value"; "" when absent.
func flagValue(args []string, names ...string) string {
	for i, arg := range args {
		for _, name := range names {
			if arg == name && i+1 < len(args) {
				return args[i+1]
			}
			if value, found := strings.CutPrefix(arg, name+"="); found {
				return value
			}
		}
	}
	return ""
}

// boundingSet is this process's capability bounding set (CapBnd), which no container
// started from here can exceed.
func boundingSet() (*big.Int, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, found := strings.CutPrefix(line, "CapBnd:"); found {
			value, ok := new(big.Int).SetString(strings.TrimSpace(hex), 16)
			if !ok {
				return nil, fmt.Errorf("cannot parse %q", line)
			}
			return value, nil
		}
	}
	return nil, fmt.Errorf("no CapBnd line in /proc/self/status")
}

// dropCapabilities rewrites path without the capabilities outside bounding, in every
// set of the process object that pointer leads to. An unchanged file is not written.
func dropCapabilities(path string, pointer []string, bounding *big.Int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber() // keeps large integers (rlimits, ids) exactly as written
	var document map[string]any
	if err := decoder.Decode(&document); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	process := document
	for _, key := range pointer {
		next, ok := process[key].(map[string]any)
		if !ok {
			return nil
		}
		process = next
	}
	capabilities, ok := process["capabilities"].(map[string]any)
	if !ok {
		return nil
	}
	changed := false
	for _, set := range capabilitySets {
		names, ok := capabilities[set].([]any)
		if !ok {
			continue
		}
		kept := names[:0:0]
		for _, name := range names {
			if held(name, bounding) {
				kept = append(kept, name)
			}
		}
		if len(kept) != len(names) {
			capabilities[set] = kept
			changed = true
		}
	}
	if !changed {
		return nil
	}
	edited, err := json.Marshal(document)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	partial := path + ".tidelog-runc"
	if err := os.WriteFile(partial, edited, info.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(partial, path)
}

// held says whether the capability named by name is in bounding; names this program
// does not know are left for runc to judge.
func held(name any, bounding *big.Int) bool {
	text, ok := name.(string)
	if !ok {
		return true
	}
	bit, known := capabilityBits[strings.ToUpper(text)]
	return !known || bounding.Bit(int(bit)) == 1
}
