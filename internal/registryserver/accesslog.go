package registryserver

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// accessLog logs one debug line per request (method, path, status, bytes,
// duration, client) when logger is enabled at debug level.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !logger.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rec := &logRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Int64("bytes", rec.n),
			slog.Duration("duration", time.Since(start).Round(time.Microsecond)),
			slog.String("client", r.RemoteAddr),
		}
		if u, _, ok := r.BasicAuth(); ok {
			attrs = append(attrs, slog.String("user", u))
		}
		logger.LogAttrs(context.Background(), slog.LevelDebug, "request", attrs...)
	})
}

type logRecorder struct {
	http.ResponseWriter
	status int
	n      int64
}

func (l *logRecorder) WriteHeader(code int) {
	if l.status == 0 {
		l.status = code
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *logRecorder) Write(b []byte) (int, error) {
	if l.status == 0 {
		l.status = http.StatusOK
	}
	n, err := l.ResponseWriter.Write(b)
	l.n += int64(n)
	return n, err
}

func (l *logRecorder) Flush() {
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (l *logRecorder) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// exposed reports whether addr is reachable from other machines (not loopback).
func exposed(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return true
	}
	return !tcp.IP.IsLoopback()
}

// baseURL is the URL clients use for a listener on addr.
func baseURL(addr net.Addr, tlsOn bool) string {
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	host := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
	}
	return scheme + "://" + host
}
