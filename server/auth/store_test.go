package auth

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStore_SurvivesReopen: users and ACLs written are read back after a
// reopen; the file is 0600 and holds no leftover temporary file.
func TestStore_SurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", FileName)
	s, err := OpenStore(path)
	require.NoError(t, err)
	require.NoError(t, s.CreateUser(User{Name: "alice", Password: "pw1"}))
	require.ErrorIs(t, s.CreateUser(User{Name: "alice", Password: "pw2"}), ErrUserExists)
	require.NoError(t, s.CreateUser(User{Name: "root", Password: "pw", Type: Super}))
	var acl ACL
	acl.Put(Custom, mustEntry(t, "Topic:orders", "Pub", "Allow", "10.0.0.0/8", "127.0.0.1"))
	acl.Put(Default, mustEntry(t, "Group:*", "Sub", "Deny"))
	require.NoError(t, s.PutACL("alice", acl))
	require.ErrorIs(t, s.PutACL("nobody", acl), ErrUserNotFound)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	_, err = os.Stat(path + ".tmp")
	require.ErrorIs(t, err, os.ErrNotExist)

	s2, err := OpenStore(path)
	require.NoError(t, err)
	u, ok := s2.User("alice")
	require.True(t, ok)
	require.Equal(t, User{Name: "alice", Password: "pw1"}, u)
	got, ok := s2.ACL("alice")
	require.True(t, ok)
	require.Equal(t, acl.Info("alice"), got.Info("alice"))
	require.Len(t, s2.Users(""), 2)
	require.Len(t, s2.Users("ro"), 1)

	require.NoError(t, s2.DeleteUser("alice"))
	_, ok = s2.ACL("alice")
	require.False(t, ok, "deleting a user deletes its ACL")
	s3, err := OpenStore(path)
	require.NoError(t, err)
	_, ok = s3.User("alice")
	require.False(t, ok)
}

// TestStore_CorruptFileRefusesToOpen: a torn, garbled or invalid file is
// ErrCorrupt (the broker then refuses to start) and never an empty store;
// a temporary file left by a crash mid-write is ignored.
func TestStore_CorruptFileRefusesToOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s, err := OpenStore(path)
	require.NoError(t, err)
	require.NoError(t, s.CreateUser(User{Name: "alice", Password: "pw"}))
	good, err := os.ReadFile(path)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(path+".tmp", good[:len(good)/2], 0o600)) // a crash before the rename
	s2, err := OpenStore(path)
	require.NoError(t, err)
	_, ok := s2.User("alice")
	require.True(t, ok)

	for name, b := range map[string][]byte{
		"torn":          good[:len(good)-3],
		"garbled":       []byte(strings.Replace(string(good), `"users"`, `"usrs"`, 1)),
		"bad user type": []byte(strings.Replace(string(good), `"Normal"`, `"Root"`, 1)),
		"empty":         {},
		"trailing":      append(append([]byte{}, good...), "{}"...),
		"old version":   []byte(strings.Replace(string(good), `"version": 1`, `"version": 2`, 1)),
	} {
		require.NoError(t, os.WriteFile(path, b, 0o600))
		_, err := OpenStore(path)
		require.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// TestStore_DeleteACL: one entry, a policy type, or the whole ACL.
func TestStore_DeleteACL(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), FileName))
	require.NoError(t, err)
	require.NoError(t, s.CreateUser(User{Name: "alice", Password: "pw"}))
	var acl ACL
	acl.Put(Custom, mustEntry(t, "Topic:a", "Pub", "Allow"))
	acl.Put(Custom, mustEntry(t, "Topic:b", "Pub", "Allow"))
	acl.Put(Default, mustEntry(t, "Topic:*", "Sub", "Allow"))
	require.NoError(t, s.PutACL("alice", acl))
	a := Topic("a")
	require.NoError(t, s.DeleteACL("alice", nil, &a))
	require.ErrorIs(t, s.DeleteACL("alice", nil, &a), ErrACLNotFound)
	d := Default
	require.NoError(t, s.DeleteACL("alice", &d, nil))
	got, _ := s.ACL("alice")
	require.Equal(t, "Topic:b", got.Info("alice").Policies[0].Entries[0].Resource)
	require.Len(t, got.Info("alice").Policies, 1)
	require.NoError(t, s.DeleteACL("alice", nil, nil))
	_, ok := s.ACL("alice")
	require.False(t, ok)
}

// TestAuthorize: Super skips; a Normal user needs an allowing entry for
// every check; SuperOnly refuses Normal users; unknown or empty users are
// refused, never taken as Super.
func TestAuthorize(t *testing.T) {
	a := newTestAuthority(t, Config{InitUser: &InitUser{Username: "root", Password: "pw"}})
	require.NoError(t, a.Store().CreateUser(User{Name: "alice", Password: "pw"}))
	var acl ACL
	acl.Put(Custom, mustEntry(t, "Topic:orders", "Pub", "Allow"))
	acl.Put(Custom, mustEntry(t, "Group:g", "Sub", "Allow"))
	require.NoError(t, a.Store().PutACL("alice", acl))
	ip := netip.MustParseAddr("127.0.0.1")
	require.NoError(t, a.Authorize("root", []Check{{SuperOnly: true}}, ip))
	require.NoError(t, a.Authorize("alice", []Check{{Resource: Topic("orders"), Actions: Pub}}, ip))
	require.NoError(t, a.Authorize("alice", nil, ip))
	err := a.Authorize("alice", []Check{{Resource: Group("g"), Actions: Sub}, {Resource: Topic("orders"), Actions: Sub}}, ip)
	require.EqualError(t, err, "auth: User:alice has no permission to access Topic:orders from 127.0.0.1, no matched policies.")
	require.Error(t, a.Authorize("alice", []Check{{Resource: Cluster("c"), Actions: Update, SuperOnly: true}}, ip))
	require.EqualError(t, a.Authorize("", nil, ip), "auth: username cannot be null.")
	require.EqualError(t, a.Authorize("bob", nil, ip), "auth: User:bob not found.")
}

// TestOpen_MigratesPlainACL: a 4.x plain_acl.yml becomes users and
// policies; white addresses are not imported; existing users are kept.
func TestOpen_MigratesPlainACL(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "plain_acl.yml")
	require.NoError(t, os.WriteFile(yml, []byte(`globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    whiteRemoteAddress: 192.168.0.*
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: "12345678"
    admin: true
`), 0o600))
	a, err := Open(filepath.Join(dir, FileName), Config{MigrateFromV1: true, V1File: yml}, nil)
	require.NoError(t, err)
	u, ok := a.Store().User("RocketMQ")
	require.True(t, ok)
	require.Equal(t, Normal, u.Type)
	require.True(t, a.IsSuper("rocketmq2"))
	ip := netip.MustParseAddr("192.168.0.1")
	require.NoError(t, a.Authorize("RocketMQ", []Check{{Resource: Topic("topicB"), Actions: Pub}}, ip))
	require.Error(t, a.Authorize("RocketMQ", []Check{{Resource: Topic("topicA"), Actions: Sub}}, ip))
	require.Error(t, a.Authorize("RocketMQ", []Check{{Resource: Topic("other"), Actions: Pub}}, ip), "defaultTopicPerm DENY")
	require.NoError(t, a.Authorize("RocketMQ", []Check{{Resource: Group("groupX"), Actions: Sub}}, ip), "defaultGroupPerm SUB")
	require.Error(t, a.Authorize("RocketMQ", []Check{{Resource: Group("groupA"), Actions: Sub}}, ip))
}
