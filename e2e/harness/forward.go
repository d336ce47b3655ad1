package harness

import (
	"io"
	"net"
	"sync"
)

// Forward listens on addr inside namespace ns and relays every connection
// to target, dialled from the harness's own namespace: how nodes reach the
// local stack, which listens on the host's loopback. It stops when the
// returned listener is closed.
func Forward(ns, addr, target string) (net.Listener, error) {
	l, err := ListenIn(ns, addr)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go relay(c, target)
		}
	}()
	return l, nil
}

// relay copies both ways between c and a new connection to target, and
// closes both once either side is done.
func relay(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
}
