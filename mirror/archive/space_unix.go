//go:build unix

package archive

import "syscall"

// filesystemFree is what an unprivileged user may still write on the
// filesystem holding path.
func filesystemFree(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
