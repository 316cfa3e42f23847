package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/remoting"
)

// The mqadmin binary, built once per test process into a temporary folder
// that TestMain removes.
var mqadminBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func mqadminPath(t *testing.T) string {
	t.Helper()
	require.NoError(t, buildMQAdmin(), "building cmd/mqadmin")
	return mqadminBin.path
}

// buildMQAdmin builds the binary once; a test may start it early, on a
// goroutine of its own, to have it ready when it needs it.
func buildMQAdmin() error {
	mqadminBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mqadmin-e2e-")
		if err != nil {
			mqadminBin.err = err
			return
		}
		mqadminBin.dir = dir
		path := filepath.Join(dir, "mqadmin")
		_, file, _, _ := runtime.Caller(0)
		goCmd, err := exec.LookPath("go")
		if err != nil { // not on PATH: the toolchain that built this test
			goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		cmd := exec.Command(goCmd, "build", "-o", path, "./cmd/mqadmin")
		cmd.Dir = filepath.Dir(filepath.Dir(file)) // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			mqadminBin.err = &buildError{err, string(out)}
			return
		}
		mqadminBin.path = path
	})
	return mqadminBin.err
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func removeMQAdminBinary() {
	if mqadminBin.dir != "" {
		os.RemoveAll(mqadminBin.dir)
	}
}

// mqResult is one run of the binary.
type mqResult struct {
	stdout, stderr string
	code           int
}

// mqadmin runs the built binary with args, -n the system's name server
// and a timeout that a machine loaded by -race and other tests meets, and
// returns what it printed.
func (s *system) mqadmin(args ...string) mqResult {
	s.t.Helper()
	return runMQAdmin(s.t, nil, append(args, "-n", s.nsAddr, "--timeout", "30s")...)
}

func runMQAdmin(t *testing.T, env []string, args ...string) mqResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mqadminPath(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := mqResult{stdout: out.String(), stderr: errOut.String()}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running mqadmin %v: %v", args, err)
		r.code = ee.ExitCode()
	}
	return r
}

// ok runs mqadmin and requires it to succeed.
func (s *system) mqOK(args ...string) string {
	s.t.Helper()
	r := s.mqadmin(args...)
	require.Equal(s.t, 0, r.code, "mqadmin %v failed: %s%s", args, r.stderr, r.stdout)
	return r.stdout
}

// mqJSON runs mqadmin with --json and decodes its output into v.
func (s *system) mqJSON(v any, args ...string) {
	s.t.Helper()
	out := s.mqOK(append(args, "--json")...)
	require.NoError(s.t, json.Unmarshal([]byte(out), v), "mqadmin %v --json printed:\n%s", args, out)
}

// tableRows parses an aligned table: the header line (cells start with
// '#') and the rows under it, split on runs of two or more spaces.
func tableRows(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	require.True(t, strings.HasPrefix(lines[0], "#"), "no table header in:\n%s", out)
	split := func(l string) []string {
		var cells []string
		for _, c := range strings.Split(strings.TrimSpace(l), "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		return cells
	}
	header = split(lines[0])
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		rows = append(rows, split(l))
	}
	return header, rows
}

// column returns the cells of a named column ("#Topic").
func column(t *testing.T, header []string, rows [][]string, name string) []string {
	t.Helper()
	i := -1
	for j, h := range header {
		if h == name {
			i = j
		}
	}
	require.GreaterOrEqual(t, i, 0, "no column %s in %v", name, header)
	var out []string
	for _, r := range rows {
		if i < len(r) {
			out = append(out, r[i])
		}
	}
	return out
}

// requireBrokerCode skips the test when the broker answers a request code
// with REQUEST_CODE_NOT_SUPPORTED: an admin code not implemented yet.
func (s *system) requireBrokerCode(code int, name string) {
	s.t.Helper()
	resp := invoke(s.t, s.b.Addr(), remoting.NewRequest(code, map[string]string{
		"topic": "TBW102", "consumerGroup": "g", "producerGroup": "g", "group": "g", "groupName": "g", "timestamp": "0", "isForce": "true",
	}, nil))
	if resp.Code == remoting.RequestCodeNotSupported {
		s.t.Skipf("the broker does not serve %s (%d) yet", name, code)
	}
}

func jsonDecode(s string, v any) error { return json.Unmarshal([]byte(s), v) }
