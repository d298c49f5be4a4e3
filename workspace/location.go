package workspace

import (
	"path/filepath"

	"github.com/airlock-mirror/airlock/location"
)

// WorkspaceDir returns the workspace folder of a --workspace location (parsed
// by location.ParseDir: file://DIR or DIR). As oc-mirror does, DIR may name the
// working directory itself (file://WS/working-dir): the workspace is then the
// folder holding it. Another scheme is an error.
func WorkspaceDir(l location.Location) (string, error) {
	if !l.Is(location.SchemeFile) {
		return "", &location.Error{Flag: "--workspace", Input: l.String(), Want: location.WantDir}
	}
	dir := l.Path
	if filepath.Base(dir) == WorkingDirName {
		dir = filepath.Dir(dir)
	}
	return dir, nil
}

// OpenLocation returns the working directory (DIR/working-dir, absolute) of a
// --workspace location (see WorkspaceDir).
func OpenLocation(l location.Location) (Dir, error) {
	dir, err := WorkspaceDir(l)
	if err != nil {
		return "", err
	}
	return Open(dir)
}
