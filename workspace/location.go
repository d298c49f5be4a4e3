package workspace

import (
	"fmt"
	"path/filepath"
	"strings"
)

// FileDir returns DIR of a file://DIR location given to the command-line flag
// flag (the flag's name only serves the error message, e.g. "--workspace").
func FileDir(location, flag string) (string, error) {
	p, ok := strings.CutPrefix(location, "file://")
	if !ok || p == "" {
		return "", fmt.Errorf("%s %q must be file://DIR", flag, location)
	}
	return filepath.Clean(p), nil
}

// OpenLocation returns the working directory (DIR/working-dir, absolute) of a
// --workspace file://DIR location.
func OpenLocation(location string) (Dir, error) {
	dir, err := FileDir(location, "--workspace")
	if err != nil {
		return "", err
	}
	return Open(dir)
}
