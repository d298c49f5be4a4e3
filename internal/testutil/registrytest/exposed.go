package registrytest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Exposed forwards a non-loopback address of this machine, byte for byte, to
// host (a registry on 127.0.0.1) and returns that address ("IP:PORT"). A
// client must treat it as a remote registry: airlock allows plain HTTP
// without --src-tls-verify=false / --dest-tls-verify=false only to loopback
// hosts, so a plain-HTTP registry is reached here as users reach one on
// their network. The forwarder stops with t.Cleanup. It skips t when this
// machine has no non-loopback IPv4 address.
func Exposed(t testing.TB, host string) string {
	t.Helper()
	ip := nonLoopbackIP()
	if ip == nil {
		t.Skip("registrytest: this machine has no non-loopback IPv4 address to expose a registry on")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Skipf("registrytest: cannot listen on %s: %v", ip, err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false // stopped
		}
		conns = append(conns, c)
		return true
	}
	conns = []net.Conn{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", host)
			if err != nil || !track(c) || !track(up) {
				c.Close()
				if up != nil {
					up.Close()
				}
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(up, c); closeWrite(up) }()
			go func() { defer wg.Done(); io.Copy(c, up); closeWrite(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// closeWrite half-closes c after its peer finished sending.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

// nonLoopbackIP is an IPv4 address of this machine that is not loopback nor
// link-local (nil when there is none).
func nonLoopbackIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP
		}
	}
	return nil
}

// UntrustedKinds name the registries Untrusted starts: what a client that
// verifies TLS (airlock's zero options) must refuse.
var UntrustedKinds = []string{"self-signed", "plain HTTP"}

// Untrusted starts a registry of kind (one of UntrustedKinds): HTTPS with a
// self-signed certificate, or plain HTTP reached at a non-loopback address
// (Exposed; skipped when there is none). It returns the registry (at its
// loopback address, for pushing with TLSConfig) and the host to reach it at.
func Untrusted(t testing.TB, kind string) (*Registry, string) {
	t.Helper()
	switch kind {
	case "self-signed":
		r := Start(t, WithTLS())
		return r, r.Host()
	case "plain HTTP":
		r := Start(t)
		return r, Exposed(t, r.Host())
	}
	t.Fatalf("registrytest: unknown untrusted kind %q (want one of %v)", kind, UntrustedKinds)
	return nil, ""
}
