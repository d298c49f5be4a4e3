package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Measure is what one child process cost.
type Measure struct {
	// Wall is the elapsed time from start to exit.
	Wall time.Duration
	// MaxRSS is the child's peak resident set size in bytes (ru_maxrss).
	MaxRSS int64
	// User and Sys are the child's CPU times.
	User, Sys time.Duration
	// Exit is the exit status (-1 when killed by a signal).
	Exit int
	// Stdout (unless redirected) and Stderr, truncated to their last 64 KiB.
	Stdout, Stderr string
}

// CPU returns user + system time.
func (m Measure) CPU() time.Duration { return m.User + m.Sys }

// Command describes a child process to measure.
type Command struct {
	Name string
	Args []string
	Dir  string
	Env  []string // added to the environment
	// Stdout receives the standard output instead of Measure.Stdout
	// (e.g. os.DevNull opened for writing).
	Stdout io.Writer
}

func (c Command) String() string {
	return strings.TrimSpace(c.Name + " " + strings.Join(c.Args, " "))
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	b   bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 2*t.max {
		keep := append([]byte(nil), t.b.Bytes()[t.b.Len()-t.max:]...)
		t.b.Reset()
		t.b.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	s := t.b.String()
	if len(s) > t.max {
		s = s[len(s)-t.max:]
	}
	return s
}

// Exec runs c to completion and measures it with the kernel's accounting of the
// child (wait4 rusage): wall time, peak RSS and CPU. A non-zero exit is not an
// error (see Measure.Exit); failing to start is.
func Exec(ctx context.Context, c Command) (Measure, error) {
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	out := &tailBuffer{max: 64 << 10}
	errb := &tailBuffer{max: 64 << 10}
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	} else {
		cmd.Stdout = out
	}
	cmd.Stderr = errb
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return Measure{}, fmt.Errorf("start %s: %w", c.Name, err)
	}
	err := cmd.Wait()
	m := Measure{Wall: time.Since(t0), Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return m, fmt.Errorf("run %s: %w", c, err)
	}
	m.Exit = cmd.ProcessState.ExitCode()
	fillUsage(&m, cmd.ProcessState)
	return m, nil
}

func fillUsage(m *Measure, ps *os.ProcessState) {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		m.MaxRSS = int64(ru.Maxrss) * 1024 // KiB on Linux
	}
	m.User, m.Sys = ps.UserTime(), ps.SystemTime()
}

// procCPU returns the CPU time (user + system) a running process has used so
// far, from /proc/PID/stat; 0 when unavailable.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
}

// procRSS returns the peak RSS (VmHWM) of a running process in bytes.
func procRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n * 1024
		}
	}
	return 0
}
