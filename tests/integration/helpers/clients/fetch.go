// fetch.go - Go's net/http as a workload uses it, for t_clients.sh:
// http.DefaultClient (ProxyFromEnvironment, the system's roots or
// SSL_CERT_FILE).  Built by the test with the standard library only.
//
//	fetch OUTDIR TAG URL AUTH [TAG URL AUTH...]
//
// For each TAG, a GET of URL, with "Authorization: AUTH" unless AUTH is
// "-"; prints TAG.status=CODE and TAG.reason=X-MOAT-REASON, or
// TAG.status=ERROR and TAG.error=TEXT, and writes the body to
// OUTDIR/TAG.body.  The first line is version=go VERSION.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func out(k, v string) {
	v = strings.ReplaceAll(v, "\n", " ")
	if len(v) > 300 {
		v = v[:300]
	}
	fmt.Printf("%s=%s\n", k, v)
}

func get(url, auth string) (int, string, []byte, error) {
	q, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, "", nil, err
	}
	if auth != "-" {
		q.Header.Set("Authorization", auth)
	}
	c := &http.Client{Timeout: 15 * time.Second}
	r, err := c.Do(q)
	if err != nil {
		return 0, "", nil, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return r.StatusCode, r.Header.Get("X-Moat-Reason"), b, err
}

func main() {
	if len(os.Args) < 2 || (len(os.Args)-2)%3 != 0 {
		fmt.Fprintln(os.Stderr, "usage: fetch OUTDIR TAG URL AUTH...")
		os.Exit(2)
	}
	out("version", "go "+strings.TrimPrefix(runtime.Version(), "go"))
	args := os.Args[2:]
	for i := 0; i < len(args); i += 3 {
		tag, url, auth := args[i], args[i+1], args[i+2]
		status, reason, body, err := get(url, auth)
		if err != nil {
			out(tag+".status", "ERROR")
			out(tag+".error", err.Error())
			continue
		}
		os.WriteFile(filepath.Join(os.Args[1], tag+".body"), body, 0644)
		out(tag+".status", fmt.Sprint(status))
		out(tag+".reason", reason)
	}
}
