package registry

import (
	"context"
	"io"
	"net"
	"sync"
)

// largeWrite is the size of the writes a request body is sent with on a plain
// TCP connection. net/http copies a body to the connection 32 KiB at a time
// (through io.Copy, whatever the body): a 2 MB blob sent whole took 64 write
// system calls and as many packets, each processed on both ends (on loopback
// the sender's write does the receiver's TCP work too). Bigger writes cut the
// client's CPU per GB copied. TLS connections are not concerned: tls.Conn
// writes records of its own.
const largeWrite = 1 << 20

var largeWriteBufs = sync.Pool{New: func() any { b := make([]byte, largeWrite); return &b }}

// largeWrites wraps dial so that the connections it returns copy request
// bodies to the socket in writes of up to largeWrite bytes.
func largeWrites(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return largeWriteConn{c}, nil
	}
}

// largeWriteConn is a connection whose ReadFrom (what net/http's body copy
// ends in) reads up to largeWrite bytes before each write.
type largeWriteConn struct{ net.Conn }

// ReadFrom implements io.ReaderFrom.
func (c largeWriteConn) ReadFrom(r io.Reader) (int64, error) {
	p := largeWriteBufs.Get().(*[]byte)
	defer largeWriteBufs.Put(p)
	return io.CopyBuffer(writeOnly{c.Conn}, readOnly{r}, *p)
}

// writeOnly and readOnly hide ReadFrom and WriteTo from io.CopyBuffer, so that
// it uses the buffer it is given.
type writeOnly struct{ io.Writer }

type readOnly struct{ io.Reader }
