package testbin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Ended reports whether the process pid is gone: absent from /proc, or a
// zombie (dead, waiting for a parent that may never reap it: a process
// whose parent died is adopted by init or a subreaper, which need not wait
// for it). It reads /proc, so it answers only on Linux.
func Ended(pid int) bool {
	state, _, ok := stat(pid)
	return !ok || state == "Z"
}

// Children lists the live processes whose parent is pid.
func Children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid, ok := stat(child); ok && ppid == pid && state != "Z" {
			out = append(out, child)
		}
	}
	return out
}

// Descendants lists the live processes below pid: its children, theirs,
// and so on.
func Descendants(pid int) []int {
	var out []int
	for next := []int{pid}; len(next) > 0; {
		var below []int
		for _, p := range next {
			below = append(below, Children(p)...)
		}
		out = append(out, below...)
		next = below
	}
	return out
}

// stat reads the state and the parent of pid from /proc/<pid>/stat.
func stat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// split after the last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}
