package auth

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
)

// authProviders are the class names Apache RocketMQ 5.3 documents for its
// built-in authentication and authorization, each accepted as "the
// built-in users file"; any other value refuses to start (Apache would
// start and refuse every request, or load a class we do not have).
var authProviders = map[string]map[string]bool{
	"authenticationProvider":         {"org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider": true},
	"authorizationProvider":          {"org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider": true},
	"authenticationMetadataProvider": {"org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider": true},
	"authorizationMetadataProvider":  {"org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider": true},
	"authenticationStrategy": {
		"org.apache.rocketmq.auth.authentication.strategy.StatelessAuthenticationStrategy": true,
		"org.apache.rocketmq.auth.authentication.strategy.StatefulAuthenticationStrategy":  true,
	},
	"authorizationStrategy": {
		"org.apache.rocketmq.auth.authorization.strategy.StatelessAuthorizationStrategy": true,
		"org.apache.rocketmq.auth.authorization.strategy.StatefulAuthorizationStrategy":  true,
	},
}

// ApplyProperty sets c from one of Apache 5.3's AuthConfig keys (of
// broker.conf, and of the name server's config here) and reports whether
// k is one. rocketmqHome locates the plain_acl.yml of
// migrateAuthFromV1Enabled (conf/plain_acl.yml under it).
func (c *Config) ApplyProperty(k, v string) (bool, error) {
	var err error
	switch k {
	case "authenticationEnabled":
		c.AuthenticationEnabled, err = strconv.ParseBool(v)
	case "authorizationEnabled":
		c.AuthorizationEnabled, err = strconv.ParseBool(v)
	case "migrateAuthFromV1Enabled":
		c.MigrateFromV1, err = strconv.ParseBool(v)
	case "authenticationWhitelist":
		c.AuthenticationWhitelist, err = ParseCodes(v)
	case "authorizationWhitelist":
		c.AuthorizationWhitelist, err = ParseCodes(v)
	case "initAuthenticationUser":
		if v == "" {
			return true, nil
		}
		var u InitUser
		if err = json.Unmarshal([]byte(v), &u); err == nil && (u.Username == "" || u.Password == "") {
			err = fmt.Errorf(`want {"username":"...","password":"..."}`)
		}
		c.InitUser = &u
	case "innerClientAuthenticationCredentials":
		if v == "" {
			return true, nil
		}
		var cr Credentials
		if err = json.Unmarshal([]byte(v), &cr); err == nil && (cr.AccessKey == "" || cr.SecretKey == "") {
			err = fmt.Errorf(`want {"accessKey":"...","secretKey":"..."}`)
		}
		c.Inner = &cr
	case "rocketmqHome":
		c.V1File = filepath.Join(v, "conf", "plain_acl.yml")
	default:
		ok, has := authProviders[k]
		if !has {
			return false, nil
		}
		if v != "" && !ok[v] {
			return true, fmt.Errorf("%s=%q: only Apache's built-in provider is supported (%s), or leave it blank", k, v, firstKey(ok))
		}
	}
	if err != nil {
		return true, fmt.Errorf("%s=%q: %w", k, redact(k, v), err)
	}
	return true, nil
}

// redact hides the secrets of a key's value in errors and logs.
func redact(k, v string) string {
	if k == "initAuthenticationUser" || k == "innerClientAuthenticationCredentials" {
		return "(not shown)"
	}
	return v
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
