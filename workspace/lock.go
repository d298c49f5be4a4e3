package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/internal/redact"
	"golang.org/x/sys/unix"
)

// Locks: a run holds its working directory with flock(2) on
// working-dir/airlock.lock, so that a second run on the same workspace (or
// mirror-to-disk target) refuses at once instead of both writing the same
// files. The kernel releases the lock when the holding process ends, however
// it ends: a lock of a dead process is never in the way, and there is nothing
// to remove by hand. The holder writes who it is into the file (PID, host,
// start time, command) so that a refused run can name it.
//
// A run that writes the working directory holds it exclusively. The shards of
// a plan share it (each writes only its own shards/PART folder, which it holds
// exclusively), as does `airlock report` (it only rewrites report.html);
// commands that only read (history, archive verify) take no lock: every record
// is replaced atomically, so they read either the old or the new version.

// LockFile is the lock of a working directory.
const LockFile = "airlock.lock"

// LockPath is airlock.lock.
func (d Dir) LockPath() string { return d.join(LockFile) }

// ErrLocked is wrapped by the error a lock refusal returns (a LockedError).
var ErrLocked = errors.New("in use by another airlock run")

// Holder is who holds a lock, as the lock file records it.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	// Command is the holder's command line (credentials in URLs removed).
	Command string `json:"command"`
}

func (h Holder) String() string {
	return fmt.Sprintf("PID %d on %s, started %s (%s ago): %s", h.PID, h.Host, h.Started.UTC().Format(time.DateTime+" UTC"),
		time.Since(h.Started).Round(time.Second), h.Command)
}

// alive reports whether h may still run: a process of another host is
// assumed to.
func (h Holder) alive() bool {
	if h.PID <= 0 || h.Host != hostname() {
		return h.PID > 0
	}
	err := unix.Kill(h.PID, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// LockedError is a refusal: the working directory Dir is held by Holders
// (none when the holder could not be identified).
type LockedError struct {
	Dir     string
	Holders []Holder
	// Shared is set when the holders share the lock (shards of a plan).
	Shared bool
}

func (e *LockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is %v", e.Dir, ErrLocked)
	switch {
	case len(e.Holders) == 0 && e.Shared:
		b.WriteString(" (shards of a plan, or airlock report)")
	case len(e.Holders) == 0:
		b.WriteString(" (it is starting: its details are not written yet)")
	}
	for _, h := range e.Holders {
		b.WriteString("\n  ")
		b.WriteString(h.String())
	}
	stop := "stop it"
	if len(e.Holders) == 1 && e.Holders[0].Host == hostname() {
		stop = fmt.Sprintf("stop it (kill %d)", e.Holders[0].PID)
	}
	fmt.Fprintf(&b, "\nwait for it to finish, or %s and run again: an interrupted run resumes where it was. The lock goes with its process: once that process is gone, the next run goes ahead (there is no lock file to remove)", stop)
	return b.String()
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held lock; Unlock releases it.
type Lock struct {
	f         *os.File
	exclusive bool
}

// lockFile is flock(2), replaced by tests.
var lockFile = unix.Flock

// Lock takes the lock of d, exclusive or shared, without waiting: when
// another run holds it, the error is a *LockedError naming the holder. A
// holder that ended without releasing the file's record (killed) is taken
// over, and log says so. On a file system without locks (some NFS mounts),
// the record alone is checked: a live process of this host that holds it
// refuses the run, anything else is taken over, with a warning.
func (d Dir) Lock(exclusive bool, log *slog.Logger) (*Lock, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(d.Path(), 0o755); err != nil {
		return nil, fmt.Errorf("create working directory: %w", err)
	}
	f, err := os.OpenFile(d.LockPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the working directory: %w", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	switch err := lockFile(int(f.Fd()), how|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		f.Close()
		return nil, d.lockedError()
	case errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
		if h := readHolder(d.LockPath()); h != nil && h.Host == hostname() && h.alive() {
			f.Close()
			return nil, &LockedError{Dir: d.Path(), Holders: []Holder{*h}}
		}
		log.Warn("the file system of the working directory has no locks (flock): a concurrent run on it from another host would not be noticed", "dir", d.Path(), "error", err)
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", d.LockPath(), err)
	}
	l := &Lock{f: f, exclusive: exclusive}
	if h := readHolder(d.LockPath()); h != nil && h.PID != os.Getpid() {
		// Holding the lock, any record in the file is of a run that ended
		// without clearing it (killed).
		log.Info("taking over the lock of a run that ended without releasing it", "dir", d.Path(), "holder", h.String())
	}
	if err := f.Truncate(0); err != nil {
		l.Unlock()
		return nil, fmt.Errorf("lock %s: %w", d.LockPath(), err)
	}
	if exclusive {
		b, _ := json.Marshal(self())
		if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
			l.Unlock()
			return nil, fmt.Errorf("lock %s: %w", d.LockPath(), err)
		}
	}
	return l, nil
}

// Unlock clears the record and releases the lock. It may be called on nil.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	if l.exclusive {
		_ = l.f.Truncate(0)
	}
	// Released explicitly: closing alone leaves the lock held while any copy
	// of the descriptor lives, as in a process this one is forking that has
	// not yet reached exec (the exec closes it, at its own pace).
	_ = lockFile(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// lockedError names who holds d: the exclusive holder's record, or the shards
// holding their folders when the lock is shared.
func (d Dir) lockedError() error {
	e := &LockedError{Dir: d.Path()}
	if h := readHolder(d.LockPath()); h != nil {
		e.Holders = []Holder{*h}
		return e
	}
	e.Shared = true
	shards, _ := filepath.Glob(filepath.Join(d.Path(), ShardsDirName, "*", LockFile))
	for _, p := range shards {
		if h := readHolder(p); h != nil && h.alive() {
			e.Holders = append(e.Holders, *h)
		}
	}
	return e
}

// readHolder reads a lock file's record; nil when there is none.
func readHolder(path string) *Holder {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	var h Holder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}

// Runs holds the locks of one run (RunLocks).
type Runs struct{ locks []*Lock }

// Unlock releases every lock, the inner first. It may be called on nil.
func (r *Runs) Unlock() {
	if r == nil {
		return
	}
	for i := len(r.locks) - 1; i >= 0; i-- {
		r.locks[i].Unlock()
	}
}

// LockRun takes the locks of a run on workspace w: exclusive, or, for the
// shard part (a shard of a plan), w shared and the shard's folder exclusive.
func LockRun(w Dir, part string, log *slog.Logger) (*Runs, error) {
	if part == "" {
		l, err := w.Lock(true, log)
		if err != nil {
			return nil, err
		}
		return &Runs{locks: []*Lock{l}}, nil
	}
	outer, err := w.Lock(false, log)
	if err != nil {
		return nil, err
	}
	inner, err := w.Shard(part).Lock(true, log)
	if err != nil {
		outer.Unlock()
		return nil, err
	}
	return &Runs{locks: []*Lock{outer, inner}}, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown host"
	}
	return h
}

// self is this process as a lock holder, from now.
func self() Holder {
	return Holder{PID: os.Getpid(), Host: hostname(), Started: time.Now().UTC().Truncate(time.Second), Command: redactArgs(os.Args)}
}

// redactArgs is the command line with credentials in references replaced by "***".
func redactArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if i == 0 {
			a = filepath.Base(a)
		}
		out[i], _ = redact.Credentials(a)
	}
	return strings.Join(out, " ")
}
