//go:build unix

package registryproc

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path (created if need be) until unlock.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// ownedPrivate checks that dir is a folder of this user that no one else
// may write to: the binary there is run, and the folder's name is known.
func ownedPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return errors.New("not a folder of this user that only this user may write to")
	}
	return nil
}
