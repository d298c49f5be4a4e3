package workspace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
)

func logTo(b *syncbuf.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func lockedBy(t *testing.T, err error) *LockedError {
	t.Helper()
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("want a LockedError, got %v", err)
	}
	return le
}

func TestLockExclusive(t *testing.T) {
	d := At(t.TempDir())
	l, err := d.Lock(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Lock(true, nil)
	le := lockedBy(t, err)
	if len(le.Holders) != 1 || le.Holders[0].PID != os.Getpid() || le.Holders[0].Host != hostname() {
		t.Fatalf("holders %+v, want this process", le.Holders)
	}
	msg := err.Error()
	for _, want := range []string{d.Path(), "PID " + strconv.Itoa(os.Getpid()), "on " + hostname(), "started ", "wait for it to finish", "kill " + strconv.Itoa(os.Getpid()), "no lock file to remove"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if _, err := d.Lock(false, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("shared lock while held exclusively: %v", err)
	}
	l.Unlock()
	l.Unlock() // twice is harmless
	if b, err := os.ReadFile(d.LockPath()); err != nil || len(b) != 0 {
		t.Fatalf("lock file after Unlock: %q, %v (want it empty)", b, err)
	}
	var log syncbuf.Buffer
	l, err = d.Lock(true, logTo(&log))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if strings.Contains(log.String(), "taking over") {
		t.Errorf("a released lock was taken over: %s", log.String())
	}
}

func TestLockRunShards(t *testing.T) {
	w := At(t.TempDir())
	a, err := LockRun(w, "shard-0-of-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LockRun(w, "shard-1-of-2", nil)
	if err != nil {
		t.Fatalf("two shards of one plan share the workspace: %v", err)
	}
	if _, err := LockRun(w, "shard-1-of-2", nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("the same shard twice: %v", err)
	}
	_, err = LockRun(w, "", nil)
	le := lockedBy(t, err)
	if !le.Shared || len(le.Holders) != 2 {
		t.Fatalf("an exclusive run while shards run: %+v, want both shards named", le)
	}
	if r, err := w.Lock(false, nil); err != nil {
		t.Fatalf("a shared lock (airlock report) beside the shards: %v", err)
	} else {
		r.Unlock()
	}
	a.Unlock()
	b.Unlock()
	var nilRuns *Runs
	nilRuns.Unlock()
	x, err := LockRun(w, "", nil)
	if err != nil {
		t.Fatalf("after the shards: %v", err)
	}
	if _, err := LockRun(w, "shard-0-of-2", nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("a shard while a run holds the workspace: %v", err)
	}
	x.Unlock()
}

// deadPID is the PID of a process that ended.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	return c.Process.Pid
}

func writeRecord(t *testing.T, d Dir, h Holder) {
	t.Helper()
	if err := os.MkdirAll(d.Path(), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(h)
	if err := os.WriteFile(d.LockPath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLockStaleRecordTakenOver(t *testing.T) {
	d := At(t.TempDir())
	writeRecord(t, d, Holder{PID: deadPID(t), Host: hostname(), Started: time.Now().Add(-time.Hour), Command: "airlock mirror gone"})
	var log syncbuf.Buffer
	l, err := d.Lock(true, logTo(&log))
	if err != nil {
		t.Fatalf("a record without a live flock holder: %v", err)
	}
	defer l.Unlock()
	if !strings.Contains(log.String(), "taking over") || !strings.Contains(log.String(), "airlock mirror gone") {
		t.Errorf("log does not say the lock was taken over: %s", log.String())
	}
	if h := readHolder(d.LockPath()); h == nil || h.PID != os.Getpid() {
		t.Errorf("record after taking over: %+v", h)
	}
}

// Without flock (some NFS mounts) the record decides: a live process of this
// host refuses, a dead one is taken over.
func TestLockWithoutFlock(t *testing.T) {
	defer func(f func(int, int) error) { lockFile = f }(lockFile)
	lockFile = func(int, int) error { return unix.ENOLCK }
	tests := []struct {
		name    string
		holder  Holder
		refused bool
	}{
		{"live holder", Holder{PID: os.Getpid(), Host: hostname(), Started: time.Now(), Command: "airlock mirror"}, true},
		{"dead holder", Holder{PID: deadPID(t), Host: hostname(), Started: time.Now(), Command: "airlock mirror"}, false},
		{"no record", Holder{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := At(t.TempDir())
			if tc.holder.PID != 0 {
				writeRecord(t, d, tc.holder)
			}
			var log syncbuf.Buffer
			l, err := d.Lock(true, logTo(&log))
			if tc.refused {
				lockedBy(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock()
			if !strings.Contains(log.String(), "has no locks") {
				t.Errorf("no warning that locks are not available: %s", log.String())
			}
		})
	}
}

func TestRedactArgs(t *testing.T) {
	got := redactArgs([]string{"/usr/bin/airlock", "mirror", "-c", "isc.yaml", "docker://user:s3cret@reg.example:5000/ns", "--workspace", "file://ws"})
	want := "airlock mirror -c isc.yaml docker://***@reg.example:5000/ns --workspace file://ws"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLockHelperProcess holds the lock of $AIRLOCK_LOCK_DIR until its stdin
// closes (TestLockAcrossProcesses starts it).
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv("AIRLOCK_LOCK_DIR")
	if dir == "" {
		t.Skip("helper process of TestLockAcrossProcesses")
	}
	l, err := Dir(dir).Lock(true, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	l.Unlock()
	os.Exit(0)
}

// Another process holds the lock: this one is refused at once, naming it;
// once that process is killed (it cannot clean up), the lock is taken over.
func TestLockAcrossProcesses(t *testing.T) {
	d := At(t.TempDir())
	c := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	c.Env = append(os.Environ(), "AIRLOCK_LOCK_DIR="+d.Path())
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		_ = c.Process.Kill()
		_ = c.Wait()
		t.Fatalf("helper: %q, %v", line, err)
	}
	_, err = d.Lock(true, nil)
	le := lockedBy(t, err)
	if len(le.Holders) != 1 || le.Holders[0].PID != c.Process.Pid {
		t.Errorf("holders %+v, want PID %d", le.Holders, c.Process.Pid)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	var log bytes.Buffer
	l, err := d.Lock(true, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	defer l.Unlock()
	if !strings.Contains(log.String(), "taking over") || !strings.Contains(log.String(), fmt.Sprintf("PID %d", c.Process.Pid)) {
		t.Errorf("log does not name the killed holder: %s", log.String())
	}
}

// TestUnlockWithDescriptorElsewhere: a lock is released by Unlock even while
// another process holds a copy of its descriptor (as a child forked by a
// concurrent goroutine does until its exec): the next run goes ahead at once.
func TestUnlockWithDescriptorElsewhere(t *testing.T) {
	d := Dir(t.TempDir())
	l, err := d.Lock(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{l.f}
	if err := child.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	l.Unlock()
	again, err := d.Lock(true, nil)
	if err != nil {
		t.Fatalf("the lock is still held after Unlock, by the descriptor another process holds: %v", err)
	}
	again.Unlock()
}
