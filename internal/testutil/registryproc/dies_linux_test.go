package registryproc_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDiesWithTheTestProcess: a test process killed with SIGKILL (no
// cleanup runs) leaves no registry process behind.
func TestDiesWithTheTestProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("test process: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("test process printed %q", line)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, &http.Client{Timeout: 30 * time.Second}, f[1]+"/v2/", "", ""); got != http.StatusOK {
		t.Fatalf("registry process: %d", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(stat), ") Z ") {
			break // dead, waiting for init to reap it
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("registry process %d still running 30 s after its test process was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
