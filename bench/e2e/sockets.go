package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Sockets is what one process holds open to one remote TCP port.
type Sockets struct {
	Total       int `json:"total"`       // every state
	Established int `json:"established"` // of those, ESTABLISHED
}

// ProcSockets counts the TCP sockets pid holds (through its file
// descriptors) whose remote port is port. /proc/<pid>/net/tcp lists every
// socket of the network namespace, so the process's own are picked out by
// the inodes its descriptors point at.
func ProcSockets(pid, port int) (Sockets, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return Sockets{}, err
	}
	inodes := map[uint64]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if n, ok := socketInode(l); ok {
			inodes[n] = true
		}
	}
	var s Sockets
	for _, f := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(dir, "net", f))
		if err != nil {
			continue // no IPv6
		}
		for _, e := range ParseNetTCP(string(b)) {
			if e.RemotePort == port && inodes[e.Inode] {
				s.Total++
				if e.State == tcpEstablished {
					s.Established++
				}
			}
		}
	}
	return s, nil
}

// socketInode reads "socket:[12345]", the target of a socket's descriptor.
func socketInode(link string) (uint64, bool) {
	v, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64)
	return n, err == nil
}

// TCPEntry is one line of /proc/net/tcp.
type TCPEntry struct {
	RemotePort int
	State      int // 1 ESTABLISHED, 6 TIME_WAIT, 8 CLOSE_WAIT, 10 LISTEN, …
	Inode      uint64
}

const tcpEstablished = 1

// ParseNetTCP reads the lines of /proc/net/tcp or tcp6 ("sl local_address
// rem_address st … inode"; addresses are hex IP:port), skipping the header
// and anything it cannot read.
func ParseNetTCP(s string) []TCPEntry {
	var out []TCPEntry
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		_, port, ok := strings.Cut(f[2], ":")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseUint(port, 16, 16)
		st, err2 := strconv.ParseUint(f[3], 16, 8)
		ino, err3 := strconv.ParseUint(f[9], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, TCPEntry{RemotePort: int(p), State: int(st), Inode: ino})
	}
	return out
}
