package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Errors of the store.
var (
	ErrUserExists   = errors.New("auth: the user is existed") // upstream's words
	ErrUserNotFound = errors.New("auth: the user is not exist")
	ErrACLNotFound  = errors.New("auth: the acl is not exist")
	// ErrCorrupt: the users file does not parse or validate; the broker
	// refuses to start rather than run without it.
	ErrCorrupt = errors.New("auth: corrupt users file")
)

// FileName is the users and ACLs file, under the store's config folder.
const FileName = "auth.json"

// Store keeps users and ACLs in memory and in one file. Reads take a
// snapshot and never wait; writes are serialized and durable before they
// are visible. It is safe for concurrent use.
type Store struct {
	path string
	mu   sync.Mutex // serializes writes
	snap atomic.Pointer[snapshot]
}

// snapshot is the store's state: replaced whole by each write, never
// changed once published.
type snapshot struct {
	users map[string]*account
	acls  map[string]*ACL
}

// account is a user and the HMAC states keyed with its password, reused
// across requests.
type account struct {
	User
	macs sync.Pool // hash.Hash: hmac.New(sha1.New, password)
}

func newAccount(u User) *account {
	a := &account{User: u}
	key := []byte(u.Password)
	a.macs.New = func() any { return hmac.New(sha1.New, key) }
	return a
}

// mac returns an HMAC-SHA1 keyed with the password, reset; give it back
// with putMAC.
func (a *account) mac() hash.Hash { return a.macs.Get().(hash.Hash) }

func (a *account) putMAC(h hash.Hash) {
	h.Reset()
	a.macs.Put(h)
}

// fileForm is the file's JSON.
type fileForm struct {
	Version int        `json:"version"`
	Users   []UserInfo `json:"users"`
	ACLs    []AclInfo  `json:"acls"`
}

// OpenStore opens the store kept in path, which need not exist (an empty
// store; the file is made at the first write). A file that does not
// parse, or holds an invalid user or entry, is ErrCorrupt.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path}
	snap := &snapshot{users: map[string]*account{}, acls: map[string]*ACL{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("auth: open %s: %w", path, err)
	default:
		if snap, err = decodeFile(b); err != nil {
			return nil, fmt.Errorf("auth: %s: %w; restore it from a backup, or move it aside to start with no users", path, err)
		}
	}
	s.snap.Store(snap)
	return s, nil
}

func decodeFile(b []byte) (*snapshot, error) {
	var f fileForm
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: data after the object", ErrCorrupt)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%w: version %d, want 1", ErrCorrupt, f.Version)
	}
	snap := &snapshot{users: map[string]*account{}, acls: map[string]*ACL{}}
	for _, ui := range f.Users {
		u, err := ui.user()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if _, dup := snap.users[u.Name]; dup {
			return nil, fmt.Errorf("%w: user %q twice", ErrCorrupt, u.Name)
		}
		snap.users[u.Name] = newAccount(u)
	}
	for i := range f.ACLs {
		name, acl, err := f.ACLs[i].Parse()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if _, ok := snap.users[name]; !ok {
			return nil, fmt.Errorf("%w: ACL of %q, who is not a user", ErrCorrupt, name)
		}
		snap.acls[name] = &acl
	}
	return snap, nil
}

// user parses a stored or received UserInfo.
func (ui UserInfo) user() (User, error) {
	u := User{Name: ui.Username, Password: ui.Password}
	var err error
	if u.Type, err = ParseUserType(ui.UserType); err != nil {
		return User{}, err
	}
	if u.Disabled, err = ParseUserStatus(ui.UserStatus); err != nil {
		return User{}, err
	}
	return u, u.Validate()
}

func (s *snapshot) encode() ([]byte, error) {
	f := fileForm{Version: 1, Users: []UserInfo{}, ACLs: []AclInfo{}}
	for _, name := range slices.Sorted(maps.Keys(s.users)) {
		a := s.users[name]
		ui := a.Info()
		ui.Password = a.Password
		f.Users = append(f.Users, ui)
	}
	for _, name := range slices.Sorted(maps.Keys(s.acls)) {
		f.ACLs = append(f.ACLs, s.acls[name].Info(name))
	}
	return json.MarshalIndent(f, "", "  ")
}

func (s *snapshot) clone() *snapshot {
	c := &snapshot{users: maps.Clone(s.users), acls: make(map[string]*ACL, len(s.acls))}
	for k, v := range s.acls {
		acl := ACL{Custom: slices.Clone(v.Custom), Default: slices.Clone(v.Default)}
		c.acls[k] = &acl
	}
	return c
}

// update applies change to a copy of the state, writes it and publishes
// it; on any error the state is unchanged.
func (s *Store) update(change func(*snapshot) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.snap.Load().clone()
	if err := change(next); err != nil {
		return err
	}
	b, err := next.encode()
	if err != nil {
		return err
	}
	if err := writeFileDurably(s.path, b); err != nil {
		return fmt.Errorf("auth: write %s: %w", s.path, err)
	}
	s.snap.Store(next)
	return nil
}

// writeFileDurably writes b to name through a temporary file: written,
// fsynced, renamed over name, and the folder fsynced; mode 0600.
func writeFileDurably(name string, b []byte) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil { // a leftover tmp may have had other bits
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// User returns the user called name (a copy).
func (s *Store) User(name string) (User, bool) {
	a, ok := s.snap.Load().users[name]
	if !ok {
		return User{}, false
	}
	return a.User, true
}

// account returns the account called name.
func (s *Store) account(name string) *account { return s.snap.Load().users[name] }

// acl returns the ACL of user name, nil when none.
func (s *Store) acl(name string) *ACL { return s.snap.Load().acls[name] }

// Users returns the users whose names contain filter (all for ""),
// sorted by name.
func (s *Store) Users(filter string) []User {
	snap := s.snap.Load()
	var out []User
	for _, name := range slices.Sorted(maps.Keys(snap.users)) {
		if strings.Contains(name, filter) {
			out = append(out, snap.users[name].User)
		}
	}
	return out
}

// CreateUser adds u; ErrUserExists when its name is taken.
func (s *Store) CreateUser(u User) error {
	if err := u.Validate(); err != nil {
		return err
	}
	return s.update(func(snap *snapshot) error {
		if _, ok := snap.users[u.Name]; ok {
			return fmt.Errorf("%w: %s", ErrUserExists, u.Name)
		}
		snap.users[u.Name] = newAccount(u)
		return nil
	})
}

// UpdateUser changes a user with f, which gets a copy; ErrUserNotFound
// when there is none.
func (s *Store) UpdateUser(name string, f func(*User) error) error {
	return s.update(func(snap *snapshot) error {
		a, ok := snap.users[name]
		if !ok {
			return fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		u := a.User
		if err := f(&u); err != nil {
			return err
		}
		u.Name = name
		if err := u.Validate(); err != nil {
			return err
		}
		snap.users[name] = newAccount(u)
		return nil
	})
}

// DeleteUser removes a user and its ACL; ErrUserNotFound when there is
// none.
func (s *Store) DeleteUser(name string) error {
	return s.update(func(snap *snapshot) error {
		if _, ok := snap.users[name]; !ok {
			return fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		delete(snap.users, name)
		delete(snap.acls, name)
		return nil
	})
}

// ACL returns a copy of user name's ACL.
func (s *Store) ACL(name string) (ACL, bool) {
	a := s.acl(name)
	if a == nil {
		return ACL{}, false
	}
	return ACL{Custom: slices.Clone(a.Custom), Default: slices.Clone(a.Default)}, true
}

// ACLs returns the ACLs by username, of the users whose names contain
// subjectFilter and, with resourceFilter, only the entries whose resource
// key contains it (users left without entries left out).
func (s *Store) ACLs(subjectFilter, resourceFilter string) map[string]ACL {
	snap := s.snap.Load()
	out := map[string]ACL{}
	for name, a := range snap.acls {
		if !strings.Contains(SubjectPrefix+name, subjectFilter) {
			continue
		}
		var c ACL
		for _, t := range []PolicyType{Custom, Default} {
			for _, e := range *a.entries(t) {
				if strings.Contains(e.Resource.String(), resourceFilter) {
					c.Put(t, e)
				}
			}
		}
		if !c.Empty() {
			out[name] = c
		}
	}
	return out
}

// PutACL merges entries into user name's ACL: each replaces the entry of
// its resource (of its policy type) or is added. The user must exist.
func (s *Store) PutACL(name string, add ACL) error {
	return s.update(func(snap *snapshot) error {
		if _, ok := snap.users[name]; !ok {
			return fmt.Errorf("%w: %s", ErrUserNotFound, name)
		}
		a := snap.acls[name]
		if a == nil {
			a = &ACL{}
			snap.acls[name] = a
		}
		for _, t := range []PolicyType{Custom, Default} {
			for _, e := range *add.entries(t) {
				a.Put(t, e)
			}
		}
		return nil
	})
}

// DeleteACL removes entries of user name's ACL: of resource r in policy
// t, or with r nil every entry of t, or with t nil the whole ACL.
// ErrACLNotFound when nothing was removed.
func (s *Store) DeleteACL(name string, t *PolicyType, r *Resource) error {
	return s.update(func(snap *snapshot) error {
		a := snap.acls[name]
		if a == nil {
			return fmt.Errorf("%w: User:%s", ErrACLNotFound, name)
		}
		switch {
		case t == nil && r == nil:
			delete(snap.acls, name)
			return nil
		case r == nil:
			if len(*a.entries(*t)) == 0 {
				return fmt.Errorf("%w: User:%s %s", ErrACLNotFound, name, t)
			}
			*a.entries(*t) = nil
		default:
			removed := false
			for _, pt := range []PolicyType{Custom, Default} {
				if t == nil || *t == pt {
					removed = a.Remove(pt, *r) || removed
				}
			}
			if !removed {
				return fmt.Errorf("%w: User:%s %s", ErrACLNotFound, name, r)
			}
		}
		if a.Empty() {
			delete(snap.acls, name)
		}
		return nil
	})
}
