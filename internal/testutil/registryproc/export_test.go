package registryproc

// StartBinary is startBinary, for the tests of a process that is no
// registry process.
var StartBinary = startBinary

// PID is the registry process's process id.
func PID(p *Proc) int { return p.cmd.Process.Pid }
