package bench

import (
	"fmt"
	"os/exec"
	"syscall"

	"tierdb/internal/osprio"
)

// startBusyLoops starts one busy loop on each of cpus (all of them when
// cpus is empty, the shared layout): another program keeping the server's
// CPUs busy, as a batch job sharing the machine would. Each runs at nice 0
// in a session of its own, so the kernel weighs it as it weighs any other
// program's work. stop kills them.
func startBusyLoops(cpus []int) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	slots := cpus
	if len(slots) == 0 {
		slots = []int{-1}
	}
	for _, cpu := range slots {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting a busy loop: %w", err)
		}
		cmds = append(cmds, c)
		if cpu >= 0 {
			if err := osprio.SetAffinity(c.Process.Pid, osprio.CPUSet{cpu}); err != nil {
				stop()
				return nil, fmt.Errorf("pinning a busy loop to CPU %d: %w", cpu, err)
			}
		}
	}
	return stop, nil
}
