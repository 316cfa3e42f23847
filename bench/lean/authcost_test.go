package lean

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

var authCost = flag.Duration("authcost", 0, "run TestBrokerCPU_AuthAndTLS: each broker's send window lasts this long, 3 rounds (e.g. -authcost 5s)")

// costBroker is cmd/broker as a child process, for its CPU time.
type costBroker struct {
	cmd    *exec.Cmd
	addr   string
	tls    bool
	ak, sk string
	rc     *remoting.Client
	cpu    time.Duration
	msgs   int64
	wall   time.Duration
}

func startCostBroker(t *testing.T, bin, conf string, tlsOn bool) *costBroker {
	dir := t.TempDir()
	cf := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(cf, []byte(conf), 0o600))
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	b := &costBroker{addr: port(), tls: tlsOn}
	b.cmd = exec.Command(bin, "-c", cf, "-namesrv.listen", port(), "-listen", b.addr, "-store.dir", filepath.Join(dir, "store"))
	require.NoError(t, b.cmd.Start())
	t.Cleanup(func() { b.cmd.Process.Kill(); b.cmd.Wait() })
	ro := remoting.Options{}
	if tlsOn {
		ro.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			return (&tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(ctx, "tcp", addr)
		}
	}
	rc, err := remoting.NewClient(ro)
	require.NoError(t, err)
	t.Cleanup(func() { rc.Close() })
	b.rc = rc
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := rc.Invoke(ctx, b.addr, remoting.NewRequest(remoting.GetBrokerRuntimeInfo, nil, nil))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	return b
}

func (b *costBroker) call(t *testing.T, code int, ext map[string]string, body string) {
	req := remoting.NewRequest(code, ext, []byte(body))
	auth.SignCommand(req, "root", "root-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := b.rc.Invoke(ctx, b.addr, req)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

func (b *costBroker) cpuNow(t *testing.T) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	require.NoError(t, err)
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// TestBrokerCPU_AuthAndTLS measures the broker's CPU per message under
// the lean producer (1 KiB bodies, 1000 in flight) with access control
// off, on (a Normal user whose ACL allows the topic: signature and policy
// checked for every send), and on over TLS; the brokers take turns in
// each round so that they share the machine's load alike. Run with
// -authcost 5s.
func TestBrokerCPU_AuthAndTLS(t *testing.T) {
	if *authCost == 0 {
		t.Skip("run with -authcost 5s")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "broker")
	build := exec.Command("go", "build", "-o", bin, "./cmd/broker")
	build.Dir = "../.." // the main module: its go.sum has the broker's dependencies, the bench module's need not
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	const base = "mappedFileSizeCommitLog=268435456\n"
	const authConf = base + `authenticationEnabled=true
authorizationEnabled=true
initAuthenticationUser={"username":"root","password":"root-secret"}
innerClientAuthenticationCredentials={"accessKey":"root","secretKey":"root-secret"}
`
	off := startCostBroker(t, bin, base, false)
	on := startCostBroker(t, bin, authConf, false)
	onTLS := startCostBroker(t, bin, authConf+"tls.server.mode=enforcing\ntls.test.mode.enable=true\n", true)
	plainTLS := startCostBroker(t, bin, base+"tls.server.mode=enforcing\ntls.test.mode.enable=true\n", true)
	for _, b := range []*costBroker{on, onTLS} {
		b.call(t, remoting.AuthCreateUser, map[string]string{"username": "app"}, `{"password":"app-secret"}`)
		b.call(t, remoting.AuthCreateACL, map[string]string{"subject": "User:app"},
			`{"subject":"User:app","policies":[{"entries":[{"resource":"Topic:LeanAuth","actions":["Pub"],"decision":"Allow"},{"resource":"Topic:Other*","actions":["Pub","Sub"],"decision":"Allow"},{"resource":"Group:g","actions":["Sub"],"decision":"Allow"}]}]}`)
		b.ak, b.sk = "app", "app-secret"
	}
	brokers := map[string]*costBroker{"off": off, "auth": on, "auth+tls": onTLS, "tls": plainTLS}
	order := []string{"off", "auth", "auth+tls", "tls"}
	for round := range 4 {
		for _, name := range order {
			b := brokers[name]
			ctx, cancel := context.WithTimeout(context.Background(), *authCost+time.Minute)
			c0 := b.cpuNow(t)
			res, err := Send(ctx, SendOptions{Addr: b.addr, Topic: "LeanAuth", Body: make([]byte, 1024), Duration: *authCost,
				AccessKey: b.ak, SecretKey: b.sk, TLS: b.tls})
			cancel()
			require.NoError(t, err, name)
			if round == 0 {
				continue // warm-up: topic creation, first files
			}
			b.cpu += b.cpuNow(t) - c0
			b.msgs += res.Messages
			b.wall += res.Elapsed
		}
	}
	per := func(b *costBroker) float64 { return float64(b.cpu.Nanoseconds()) / float64(b.msgs) }
	for _, name := range order {
		b := brokers[name]
		t.Logf("%-9s %9d msgs  %8.0f msgs/s  broker CPU %6.2f µs/msg", name, b.msgs, float64(b.msgs)/b.wall.Seconds(), per(b)/1000)
	}
	t.Logf("broker CPU per message, off ÷ auth: %.2f (auth costs %.0f%%)", per(off)/per(on), 100*(per(on)/per(off)-1))
	t.Logf("broker CPU per message, plaintext ÷ TLS: %.2f; auth ÷ auth+TLS: %.2f", per(off)/per(plainTLS), per(on)/per(onTLS))
}
