// Package simple stands in for github.com/microlib/simple, which the Go
// module proxy does not serve, so that oc-mirror v2 can be built here for the
// benchmarks (bench/ocmirror/README.md). It is written for this repository and
// has the API oc-mirror uses: a Logger with a Level and one method per level.
package simple

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Logger writes messages at or above Level ("error", "warn", "info", "debug",
// "trace"; anything else counts as "info") to standard output.
type Logger struct {
	Level string
	// Out is where lines go; nil is standard output.
	Out io.Writer
	mu  sync.Mutex
}

var ranks = map[string]int{"error": 0, "warn": 1, "info": 2, "debug": 3, "trace": 4}

func rank(level string) int {
	if r, ok := ranks[strings.ToLower(level)]; ok {
		return r
	}
	return ranks["info"]
}

func (l *Logger) print(level string, msg []interface{}) {
	if rank(level) > rank(l.Level) {
		return
	}
	out := l.Out
	if out == nil {
		out = os.Stdout
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(out, "%s [%s] : %s\n", time.Now().Format("2006/01/02 15:04:05"), strings.ToUpper(level), fmt.Sprint(msg...))
}

// Error logs at error level.
func (l *Logger) Error(msg ...interface{}) { l.print("error", msg) }

// Warn logs at warn level.
func (l *Logger) Warn(msg ...interface{}) { l.print("warn", msg) }

// Info logs at info level.
func (l *Logger) Info(msg ...interface{}) { l.print("info", msg) }

// Debug logs at debug level.
func (l *Logger) Debug(msg ...interface{}) { l.print("debug", msg) }

// Trace logs at trace level.
func (l *Logger) Trace(msg ...interface{}) { l.print("trace", msg) }
