package workspace

import (
	"fmt"
	"path/filepath"
	"strings"
)

// FileDir returns DIR of a file://DIR (or bare DIR) location given to the
// command-line flag flag (the flag's name only serves the error message, e.g.
// "--workspace"). Every command reads its locations this way; another scheme
// (docker://) is an error.
func FileDir(location, flag string) (string, error) {
	p, ok := strings.CutPrefix(location, "file://")
	if !ok && strings.Contains(location, "://") {
		p = "" // another scheme
	}
	if p == "" {
		return "", fmt.Errorf("%s %q must be file://DIR or DIR", flag, location)
	}
	return filepath.Clean(p), nil
}

// WorkspaceDir returns the workspace folder of a --workspace location
// (file://DIR or DIR). As oc-mirror does, DIR may name the working directory
// itself (file://WS/working-dir): the workspace is then the folder holding it.
func WorkspaceDir(location string) (string, error) {
	dir, err := FileDir(location, "--workspace")
	if err != nil {
		return "", err
	}
	if filepath.Base(dir) == WorkingDirName {
		dir = filepath.Dir(dir)
	}
	return dir, nil
}

// OpenLocation returns the working directory (DIR/working-dir, absolute) of a
// --workspace location (see WorkspaceDir).
func OpenLocation(location string) (Dir, error) {
	dir, err := WorkspaceDir(location)
	if err != nil {
		return "", err
	}
	return Open(dir)
}
