// Command pause is the process of a Kubernetes pod sandbox: it holds the pod's
// namespaces open and does nothing else. As PID 1 of the pod's PID namespace (when the
// pod shares one) it reaps orphaned children, and it exits 0 on SIGINT or SIGTERM.
//
// The node image built by tools/kind/node-image.sh ships it as the sandbox image
// (registry.k8s.io/pause) where no registry serves that image.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (tidelog)")
		return
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		reapChildren()
	}
}

// reapChildren collects every child that has exited, so none stays a zombie.
func reapChildren() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
