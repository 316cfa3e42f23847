package auth

import (
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// plainACL is a 4.x plain_acl.yml (ACL 1.0). Its white addresses
// (globalWhiteRemoteAddresses, whiteRemoteAddress) skipped authentication
// and are not imported.
type plainACL struct {
	GlobalWhiteRemoteAddresses []string       `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []plainAccount `yaml:"accounts"`
}

type plainAccount struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}

// migrateV1 imports the accounts of a plain_acl.yml as AuthMigrator does:
// each accessKey a user (admin: Super, else Normal) unless one exists,
// topicPerms/groupPerms as Custom entries on literal resources,
// defaultTopicPerm/defaultGroupPerm as Default entries on Topic:* and
// Group:*. A file that does not parse stops the start.
func (a *Authority) migrateV1(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("auth: migrateAuthFromV1Enabled: %w", err)
	}
	var p plainACL
	if err := yaml.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("auth: migrateAuthFromV1Enabled: %s: %w", path, err)
	}
	if len(p.GlobalWhiteRemoteAddresses) > 0 {
		a.log.Warn("not importing globalWhiteRemoteAddresses of the plain ACL file: they skipped authentication", "file", path)
	}
	for _, acc := range p.Accounts {
		if _, ok := a.store.User(acc.AccessKey); ok {
			continue
		}
		u := User{Name: acc.AccessKey, Password: acc.SecretKey}
		if acc.Admin {
			u.Type = Super
		}
		if err := a.store.CreateUser(u); err != nil {
			return fmt.Errorf("auth: migrateAuthFromV1Enabled: account %q: %w", acc.AccessKey, err)
		}
		if acc.WhiteRemoteAddress != "" {
			a.log.Warn("not importing whiteRemoteAddress: it skipped authentication", "accessKey", acc.AccessKey)
		}
		acl := v1ACL(acc)
		if !acl.Empty() {
			if err := a.store.PutACL(u.Name, acl); err != nil {
				return fmt.Errorf("auth: migrateAuthFromV1Enabled: account %q: %w", acc.AccessKey, err)
			}
		}
		a.log.Info("imported a plain ACL account", "user", u.Name, "type", u.Type)
	}
	return nil
}

func v1ACL(acc plainAccount) ACL {
	var acl ACL
	add := func(perms []string, mk func(string) Resource) {
		for _, tp := range perms {
			name, perm, ok := strings.Cut(tp, "=")
			if !ok || strings.Contains(perm, "=") {
				continue
			}
			acts, dec := v1Perm(strings.TrimSpace(perm))
			acl.Put(Custom, Entry{Resource: mk(strings.TrimSpace(name)), Actions: acts, Decision: dec})
		}
	}
	add(acc.TopicPerms, Topic)
	add(acc.GroupPerms, Group)
	if p := strings.TrimSpace(acc.DefaultTopicPerm); p != "" {
		acts, dec := v1Perm(p)
		acl.Put(Default, Entry{Resource: Resource{Type: TypeTopic, Pattern: AnyName}, Actions: acts, Decision: dec})
	}
	if p := strings.TrimSpace(acc.DefaultGroupPerm); p != "" {
		acts, dec := v1Perm(p)
		acl.Put(Default, Entry{Resource: Resource{Type: TypeGroup, Pattern: AnyName}, Actions: acts, Decision: dec})
	}
	return acl
}

// v1Perm maps an ACL 1.0 permission (DENY, PUB, SUB, PUB|SUB) to actions
// and a decision as AuthMigrator does. An unknown word is All and Deny:
// upstream makes it All and Allow (its parseDecision allows everything but
// DENY), which grants what the file never said.
func v1Perm(p string) (Actions, Decision) {
	switch p {
	case "DENY":
		return All, Deny
	case "PUB":
		return Pub, Allow
	case "SUB":
		return Sub, Allow
	case "PUB|SUB", "SUB|PUB":
		return Pub | Sub, Allow
	}
	return All, Deny
}
