package e2e

import (
	"net"
	"os"
	"testing"
)

func TestParseNetTCP(t *testing.T) {
	t.Parallel()
	in := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:8AE4 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 123456 1 0000000000000000 20 4 30 10 -1\n" +
		"   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1 0000000000000000 100 0 0 10 0\n" +
		"garbage\n"
	got := ParseNetTCP(in)
	want := []TCPEntry{{RemotePort: 8080, State: 1, Inode: 123456}, {RemotePort: 0, State: 10, Inode: 7}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestProcSocketsCountsOwnConnections(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	s, err := ProcSockets(os.Getpid(), port)
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if s.Established != 3 {
		t.Errorf("got %+v, want 3 established", s)
	}
	for _, c := range conns {
		c.Close()
	}
}
