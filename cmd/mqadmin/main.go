// Command mqadmin is an operator's tool for RocketMQ name servers and
// brokers, rocketstore's and Apache RocketMQ's alike: RocketMQ's mqadmin
// subcommands and flags over the remoting protocol (never the store's
// files). Tables by default, --json for scripts.
//
//	mqadmin -h                      the subcommands
//	mqadmin help updateTopic        one subcommand's flags
//	mqadmin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t TopicTest
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rocketstore/rocketstore/client/admin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its name and description as RocketMQ's
// SubCommand, and setup, which declares its flags and returns what runs it.
type command struct {
	name, desc string
	setup      func(f *flags) func(ctx context.Context, e *env) error
}

// commands are the subcommands, in the order help lists them.
var commands = slices.Concat([]command{
	{"updateTopic", "Update or create topic.", updateTopic},
	{"deleteTopic", "Delete topic from broker and NameServer.", deleteTopic},
	{"topicList", "Fetch all topic list from name server.", topicList},
	{"topicRoute", "Examine topic route info.", topicRoute},
	{"topicStatus", "Examine topic Status info.", topicStatus},
	{"clusterList", "List cluster infos.", clusterList},
	{"brokerStatus", "Fetch broker runtime status data.", brokerStatus},
	{"getBrokerConfig", "Get broker config by cluster or special broker.", getBrokerConfig},
	{"updateBrokerConfig", "Update broker's config.", updateBrokerConfig},
	{"updateSubGroup", "Update or create subscription group.", updateSubGroup},
	{"deleteSubGroup", "Delete subscription group from broker.", deleteSubGroup},
	{"consumerProgress", "Query consumer's progress, speed.", consumerProgress},
	{"consumerConnection", "Query consumer's socket connection, client version and subscription.", consumerConnection},
	{"producerConnection", "Query producer's socket connection and client version.", producerConnection},
	{"resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", resetOffsetByTime},
	{"queryMsgById", "Query Message by Id.", queryMsgByID},
	{"queryMsgByKey", "Query Message by Key.", queryMsgByKey},
	{"queryMsgByOffset", "Query Message by offset.", queryMsgByOffset},
	{"sendMessage", "Send a message.", sendMessage},
	{"consumeMessage", "Consume message.", consumeMessage},
	{"getControllerMetaData", "Get controller cluster's metadata.", getControllerMetaData},
	{"getSyncStateSet", "Fetch syncStateSet for target brokers.", getSyncStateSet},
	{"electMaster", "Re-elect the specified broker as master.", electMaster},
	{"getControllerConfig", "Get controller config.", getControllerConfig},
	{"updateControllerConfig", "Update controller config.", updateControllerConfig},
	{"cleanBrokerMetadata", "Clean metadata of broker on controller.", cleanBrokerMetadata},
}, authCommands)

// flags declares the command's flags, the common ones first, and returns
// them with what runs the command.
func (c *command) flags() (*flags, func(context.Context, *env) error) {
	f := newFlags(c.name)
	f.common.namesrv = f.str("n", "namesrvAddr", "", "Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876' (default $NAMESRV_ADDR)")
	f.common.json = f.sw("", "json", "print JSON instead of tables")
	f.common.help = f.sw("h", "help", "Print help")
	f.common.timeout = f.str("", "timeout", "5s", "how long to wait for each answer (a Go duration)")
	return f, c.setup(f)
}

func findCommand(name string) *command {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	return &commands[i]
}

// env is what a running subcommand uses.
type env struct {
	admin    *admin.Client
	out      *output
	stderr   io.Writer
	progress bool // stderr is a terminal: show progress bars
}

// run runs one mqadmin invocation and returns its exit status: 0 done,
// 1 failed, 2 bad usage.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || (args[0] == "help" && len(args) == 1) {
		printUsage(stdout)
		return 0
	}
	if args[0] == "help" {
		c := findCommand(args[1])
		if c == nil {
			fmt.Fprintf(stderr, "mqadmin: no subcommand %q; `mqadmin help` lists them\n", args[1])
			return 2
		}
		f, _ := c.flags()
		f.usage(stdout, c.desc)
		return 0
	}
	c := findCommand(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "mqadmin: no subcommand %q; `mqadmin help` lists them\n", args[0])
		return 2
	}
	f, runCmd := c.flags()
	namesrv, jsonOut, help := f.common.namesrv, f.common.json, f.common.help
	if err := f.parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.usage(stdout, c.desc)
			return 0
		}
		fmt.Fprintf(stderr, "mqadmin %s: %v; see `mqadmin help %s`\n", c.name, err, c.name)
		return 2
	}
	if *help {
		f.usage(stdout, c.desc)
		return 0
	}
	if *namesrv == "" {
		*namesrv = getenv("NAMESRV_ADDR")
	}
	timeout, err := time.ParseDuration(*f.common.timeout)
	if err != nil || timeout <= 0 {
		fmt.Fprintf(stderr, "mqadmin %s: option --timeout: %q is not a positive duration (5s, 500ms)\n", c.name, *f.common.timeout)
		return 2
	}
	ak, sk, err := toolsCredentials(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", c.name, err)
		return 1
	}
	ao := admin.Options{NamesrvAddrs: admin.ParseNamesrvAddrs(*namesrv), Timeout: timeout}
	if ak != "" {
		ao.Remoting.BeforeRequest = admin.Credentials(ak, sk)
	}
	ac, err := admin.New(ao)
	if err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", c.name, err)
		return 1
	}
	defer ac.Close()
	e := &env{admin: ac, out: &output{w: stdout, json: *jsonOut}, stderr: stderr, progress: isTerminal(stderr)}
	if err := runCmd(ctx, e); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "mqadmin %s: %v; see `mqadmin help %s`\n", c.name, err, c.name)
			return 2
		}
		fmt.Fprintf(stderr, "mqadmin %s: %s\n", c.name, oneLine(err))
		return 1
	}
	return 0
}

// usageError is a missing or bad flag.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// oneLine flattens an error onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "The most commonly used mqadmin commands are:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "   %s\t%s\n", c.name, c.desc)
	}
	tw.Flush()
	fmt.Fprint(w, "\nSee 'mqadmin help <command>' for more information on a specific command.\n"+
		"Every command takes -n host:port (or $NAMESRV_ADDR) and --json, and signs its requests with\n"+
		"the accessKey and secretKey of $ROCKETMQ_HOME/conf/tools.yml when there is one.\n")
}
