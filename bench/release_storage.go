package bench

import (
	"fmt"
	"os"
	"syscall"
)

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// releaseStorage is the folder the release section's registries keep their
// storage under (Config.ReleaseStorage), a description of it for the
// section's heading, and what removes it at the end (nothing for the work
// folder, which -keep keeps).
func releaseStorage(what, work string) (dir, desc string, remove func(), err error) {
	none := func() {}
	switch what {
	case "disk":
		return work, "on the work folder's disk", none, nil
	case "", "ram":
		var st syscall.Statfs_t
		if err := syscall.Statfs("/dev/shm", &st); err != nil || int64(st.Type) != tmpfsMagic {
			return work, "on the work folder's disk (/dev/shm is not a tmpfs)", none, nil
		}
		dir, err := os.MkdirTemp("/dev/shm", "airlock-bench-release-")
		if err != nil {
			return "", "", nil, fmt.Errorf("release storage in RAM: %w", err)
		}
		return dir, "in RAM (tmpfs)", func() { _ = os.RemoveAll(dir) }, nil
	}
	if err := os.MkdirAll(what, 0o755); err != nil {
		return "", "", nil, fmt.Errorf("-release-storage %s: %w", what, err)
	}
	return what, "under " + what, none, nil
}
