//go:build unix && !aix

package pluginapi

import "syscall"

// quiet reports whether the socket raw is open with nothing to read, by a
// look at it that neither waits nor takes what it sees.
func quiet(raw syscall.Conn) bool {
	rc, err := raw.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait: this is a look, not a read
	})
	return err == nil && open
}
