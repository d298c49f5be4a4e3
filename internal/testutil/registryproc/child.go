package registryproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// ready is the registry process's first line on its standard output.
type ready struct {
	URL  string `json:"url"`
	Cert []byte `json:"cert,omitempty"` // the leaf certificate (DER) of an HTTPS registry
}

// Main is the registry process (cmd/registryproc): it reads a Config as one
// JSON line from its standard input, serves the registry on 127.0.0.1:0,
// writes one JSON line saying where, then answers the commands it reads, one
// a line: "counts" (the Counter's Counts as JSON) and "reset". It stops when
// its standard input ends: the test process closed it, or died. It returns
// the process's exit status; an error goes to standard error.
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(stderr, "registryproc: read the configuration line from standard input: %v\n", err)
		return 2
	}
	var c Config
	if err := json.Unmarshal(line, &c); err != nil {
		fmt.Fprintf(stderr, "registryproc: configuration line: %v\n", err)
		return 2
	}
	srv, err := Serve(c)
	if err != nil {
		fmt.Fprintf(stderr, "registryproc: %v\n", err)
		return 1
	}
	defer srv.Stop()
	r := ready{URL: srv.BaseURL()}
	if cert := srv.Certificate(); cert != nil {
		r.Cert = cert.Raw
	}
	out := json.NewEncoder(stdout)
	if err := out.Encode(r); err != nil {
		return 1
	}
	for {
		cmd, err := in.ReadString('\n')
		if err != nil {
			return 0 // the test process closed our standard input, or died
		}
		switch cmd {
		case "counts\n":
			err = out.Encode(srv.counter.Counts().wire())
		case "reset\n":
			srv.counter.Reset()
			err = out.Encode(struct{}{})
		default:
			err = out.Encode(map[string]string{"error": fmt.Sprintf("unknown command %q", cmd)})
		}
		if err != nil {
			return 1
		}
	}
}
