package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rocketstore/rocketstore/server/auth"
)

// authCommands are Apache 5.3's ACL 2.0 subcommands
// (tools/command/auth), with its flags.
var authCommands = []command{
	{"createUser", "Create user to cluster.", createUser},
	{"updateUser", "Update user to cluster.", updateUser},
	{"deleteUser", "Delete user from cluster.", deleteUser},
	{"getUser", "Get user from cluster.", getUser},
	{"listUser", "List user from cluster.", listUser},
	{"copyUser", "Copy user to cluster.", copyUser},
	{"createAcl", "Create acl to cluster.", createACL},
	{"updateAcl", "Update acl to cluster.", updateACL},
	{"deleteAcl", "Delete acl from cluster.", deleteACL},
	{"getAcl", "Get acl from cluster.", getACL},
	{"listAcl", "List acl from cluster.", listACL},
	{"copyAcl", "Copy acl to cluster.", copyACL},
}

// toolsCredentials reads the AccessKey and SecretKey every command signs
// with, as Apache's mqadmin does: $ROCKETMQ_HOME/conf/tools.yml, keys
// accessKey and secretKey. No file: no signing.
func toolsCredentials(getenv func(string) string) (ak, sk string, err error) {
	home := getenv("ROCKETMQ_HOME")
	if home == "" {
		return "", "", nil
	}
	path := filepath.Join(home, "conf", "tools.yml")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	var c struct {
		AccessKey string `yaml:"accessKey"`
		SecretKey string `yaml:"secretKey"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return "", "", fmt.Errorf("%s: %w", path, err)
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return "", "", fmt.Errorf("%s: give both accessKey and secretKey", path)
	}
	return c.AccessKey, c.SecretKey, nil
}

// authTargets declares -c and -b and returns what resolves them.
func authTargets(f *flags, verb string) func(ctx context.Context, e *env) ([]string, error) {
	cluster := f.str("c", "clusterName", "", verb+" which cluster")
	broker := f.str("b", "brokerAddr", "", verb+" which broker")
	return func(ctx context.Context, e *env) ([]string, error) {
		addrs, err := targets(ctx, e, *broker, *cluster)
		return sortedAddrs(addrs), err
	}
}

// eachBroker runs do on every target and prints a line per broker.
func eachBroker(ctx context.Context, e *env, addrs []string, what string, do func(addr string) error) error {
	var lines []string
	for _, addr := range addrs {
		if err := do(addr); err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s to %s success.", what, addr))
	}
	return e.out.print(map[string]any{"brokers": addrs, "result": "success"}, nil, lines...)
}

func userCommand(f *flags, verb string, update bool) func(context.Context, *env) error {
	tgt := authTargets(f, verb+" user to")
	user := f.str("u", "username", "", "the username of user to "+verb)
	pass := f.str("p", "password", "", "the password of user to "+verb)
	typ := f.str("t", "userType", "", "the userType of user to "+verb+" (Super or Normal)")
	var status *string
	if update {
		status = f.str("s", "userStatus", "", "the userStatus of user to update (enable or disable)")
	}
	return func(ctx context.Context, e *env) error {
		if err := required("username", *user); err != nil {
			return err
		}
		if !update {
			if err := required("password", *pass); err != nil {
				return err
			}
		}
		addrs, err := tgt(ctx, e)
		if err != nil {
			return err
		}
		u := auth.UserInfo{Username: *user, Password: *pass, UserType: *typ}
		if status != nil {
			u.UserStatus = *status
		}
		return eachBroker(ctx, e, addrs, verb+" user", func(addr string) error {
			if update {
				return e.admin.UpdateUser(ctx, addr, u)
			}
			return e.admin.CreateUser(ctx, addr, u)
		})
	}
}

func createUser(f *flags) func(context.Context, *env) error { return userCommand(f, "create", false) }
func updateUser(f *flags) func(context.Context, *env) error { return userCommand(f, "update", true) }

func deleteUser(f *flags) func(context.Context, *env) error {
	tgt := authTargets(f, "delete user from")
	user := f.str("u", "username", "", "the username of user to delete.")
	return func(ctx context.Context, e *env) error {
		if err := required("username", *user); err != nil {
			return err
		}
		addrs, err := tgt(ctx, e)
		if err != nil {
			return err
		}
		return eachBroker(ctx, e, addrs, "delete user", func(addr string) error { return e.admin.DeleteUser(ctx, addr, *user) })
	}
}

func usersTable(rows map[string][]auth.UserInfo, addrs []string) *table {
	t := &table{header: []string{"Broker Addr", "UserName", "UserType", "UserStatus"}}
	for _, addr := range addrs {
		for _, u := range rows[addr] {
			t.add(addr, u.Username, u.UserType, u.UserStatus)
		}
	}
	return t
}

// collect fetches from every broker, by address.
func collect[T any](addrs []string, fetch func(addr string) ([]T, error)) (map[string][]T, error) {
	rows := map[string][]T{}
	for _, addr := range addrs {
		v, err := fetch(addr)
		if err != nil {
			return nil, err
		}
		rows[addr] = v
	}
	return rows, nil
}

// one is a lookup's answer as a list of none or one.
func one[T any](v T, ok bool, err error) ([]T, error) {
	if err != nil || !ok {
		return nil, err
	}
	return []T{v}, nil
}

// query is a read subcommand: it checks its required flag, asks every
// target broker and prints what they answered.
func query[T any](tgt func(context.Context, *env) ([]string, error), requiredFlag string, requiredValue *string,
	fetch func(ctx context.Context, e *env, addr string) ([]T, error), tab func(map[string][]T, []string) *table,
) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		if requiredFlag != "" {
			if err := required(requiredFlag, *requiredValue); err != nil {
				return err
			}
		}
		addrs, err := tgt(ctx, e)
		if err != nil {
			return err
		}
		rows, err := collect(addrs, func(addr string) ([]T, error) { return fetch(ctx, e, addr) })
		if err != nil {
			return err
		}
		return e.out.print(rows, []*table{tab(rows, addrs)})
	}
}

func getUser(f *flags) func(context.Context, *env) error {
	tgt := authTargets(f, "get user for")
	user := f.str("u", "username", "", "the username of user to get")
	return query(tgt, "username", user, func(ctx context.Context, e *env, addr string) ([]auth.UserInfo, error) {
		return one(e.admin.GetUser(ctx, addr, *user))
	}, usersTable)
}

func listUser(f *flags) func(context.Context, *env) error {
	tgt := authTargets(f, "list user for")
	filter := f.str("f", "filter", "", "the filter to list users")
	return query(tgt, "", nil, func(ctx context.Context, e *env, addr string) ([]auth.UserInfo, error) {
		return e.admin.ListUsers(ctx, addr, *filter)
	}, usersTable)
}

// copyUser cannot do what Apache's does (read the users with their
// passwords from one broker and create them on another): no broker here
// ever answers a password. It says so and how to do it instead.
func copyUser(f *flags) func(context.Context, *env) error {
	f.str("f", "fromBroker", "", "the source broker that the users copy from")
	f.str("t", "toBroker", "", "the target broker that the users copy to")
	f.str("u", "usernames", "", "the username list of user to copy.")
	return func(context.Context, *env) error {
		return errors.New("brokers never answer passwords, so users cannot be copied: create them on the target broker with createUser -b (copyAcl copies their ACLs)")
	}
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func aclCommand(f *flags, verb string, update bool) func(context.Context, *env) error {
	tgt := authTargets(f, verb+" acl to")
	subject := f.str("s", "subject", "", "the subject of acl to "+verb+" (User:name)")
	resources := f.str("r", "resources", "", "the resources of acl to "+verb+" (Topic:orders,Group:g*,...)")
	actions := f.str("a", "actions", "", "the actions of acl to "+verb+" (Pub,Sub,Create,Update,Delete,Get,List,All)")
	ips := f.str("i", "sourceIp", "", "the sourceIps of acl to "+verb)
	decision := f.str("d", "decision", "", "the decision of acl to "+verb+" (Allow or Deny)")
	return func(ctx context.Context, e *env) error {
		for name, v := range map[string]string{"subject": *subject, "resources": *resources, "actions": *actions, "decision": *decision} {
			if err := required(name, v); err != nil {
				return err
			}
		}
		p := auth.PolicyInfo{PolicyType: "Custom"}
		for _, r := range splitList(*resources) {
			p.Entries = append(p.Entries, auth.EntryInfo{Resource: r, Actions: splitList(*actions), SourceIps: splitList(*ips), Decision: *decision})
		}
		info := auth.AclInfo{Subject: *subject, Policies: []auth.PolicyInfo{p}}
		if _, _, err := info.Parse(); err != nil {
			return usagef("%v", err)
		}
		addrs, err := tgt(ctx, e)
		if err != nil {
			return err
		}
		return eachBroker(ctx, e, addrs, verb+" acl", func(addr string) error { return e.admin.PutACL(ctx, addr, info, update) })
	}
}

func createACL(f *flags) func(context.Context, *env) error { return aclCommand(f, "create", false) }
func updateACL(f *flags) func(context.Context, *env) error { return aclCommand(f, "update", true) }

func deleteACL(f *flags) func(context.Context, *env) error {
	tgt := authTargets(f, "delete acl from")
	subject := f.str("s", "subject", "", "the subject of acl to delete.")
	resources := f.str("r", "resources", "", "the resources of acl to delete (none: the whole acl)")
	return func(ctx context.Context, e *env) error {
		if err := required("subject", *subject); err != nil {
			return err
		}
		addrs, err := tgt(ctx, e)
		if err != nil {
			return err
		}
		return eachBroker(ctx, e, addrs, "delete acl", func(addr string) error {
			res := splitList(*resources)
			if len(res) == 0 {
				return e.admin.DeleteACL(ctx, addr, *subject, "", "")
			}
			for _, r := range res {
				if err := e.admin.DeleteACL(ctx, addr, *subject, "", r); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

func aclTable(rows map[string][]auth.AclInfo, addrs []string) *table {
	t := &table{header: []string{"Broker Addr", "Subject", "PolicyType", "Resource", "Actions", "SourceIp", "Decision"}}
	for _, addr := range addrs {
		for _, a := range rows[addr] {
			for _, p := range a.Policies {
				for _, en := range p.Entries {
					t.add(addr, a.Subject, p.PolicyType, en.Resource, strings.Join(en.Actions, ","), strings.Join(en.SourceIps, ","), en.Decision)
				}
			}
		}
	}
	return t
}

func getACL(f *flags) func(context.Context, *env) error {
	tgt := authTargets(f, "get acl for")
	subject := f.str("s", "subject", "", "the subject of acl to get")
	return query(tgt, "subject", subject, func(ctx context.Context, e *env, addr string) ([]auth.AclInfo, error) {
		return one(e.admin.GetACL(ctx, addr, *subject))
	}, aclTable)
}

func listACL(f *flags) func(context.Context, *env) error {
	tgt := authTargets(f, "list acl for")
	subject := f.str("s", "subject", "", "the subject of acl to filter.")
	resource := f.str("r", "resource", "", "the resource of acl to filter.")
	return query(tgt, "", nil, func(ctx context.Context, e *env, addr string) ([]auth.AclInfo, error) {
		return e.admin.ListACLs(ctx, addr, *subject, *resource)
	}, aclTable)
}

// copyACL reads the ACLs of the subjects (all when none given) from one
// broker and merges them into another's.
func copyACL(f *flags) func(context.Context, *env) error {
	from := f.str("f", "fromBroker", "", "the source broker that the acls copy from")
	to := f.str("t", "toBroker", "", "the target broker that the acls copy to")
	subjects := f.str("s", "subjects", "", "the subject list of acl to copy.")
	return func(ctx context.Context, e *env) error {
		if err := errors.Join(required("fromBroker", *from), required("toBroker", *to)); err != nil {
			return err
		}
		var acls []auth.AclInfo
		if list := splitList(*subjects); len(list) > 0 {
			for _, s := range list {
				a, ok, err := e.admin.GetACL(ctx, *from, s)
				if err != nil {
					return err
				}
				if ok {
					acls = append(acls, a)
				}
			}
		} else {
			var err error
			if acls, err = e.admin.ListACLs(ctx, *from, "", ""); err != nil {
				return err
			}
		}
		var lines []string
		for _, a := range acls {
			if err := e.admin.PutACL(ctx, *to, a, true); err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("copy acl of %s from %s to %s success.", a.Subject, *from, *to))
		}
		return e.out.print(map[string]any{"copied": acls}, nil, lines...)
	}
}
