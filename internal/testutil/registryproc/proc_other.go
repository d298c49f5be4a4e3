//go:build !linux

package registryproc

import "syscall"

// sysProcAttr: no parent-death signal here; the registry process stops when
// its standard input ends, which the test process's death does.
func sysProcAttr() *syscall.SysProcAttr { return nil }
