package plugins

import (
	"os/exec"
	"syscall"
)

// endWithParent has the kernel kill the plugin when svc dies, however it
// dies: a kill -9 gives svc no chance to stop its plugins, which would
// otherwise live on under init, holding their sockets. The signal comes
// when the starting thread ends (see launcher), so it is SIGKILL: no
// plugin can miss or ignore it.
func endWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
