package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/broker"
)

// TestApplyProperties_AuthKeys: Apache 5.3's quick-start broker.conf
// keys set the access control; the provider class names are Apache's.
func TestApplyProperties_AuthKeys(t *testing.T) {
	conf := `authenticationEnabled=true
authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider
authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider
authorizationEnabled=true
authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider
authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider
initAuthenticationUser={"username":"rocketmq","password":"12345678"}
innerClientAuthenticationCredentials={"accessKey":"rocketmq","secretKey":"12345678"}
authenticationWhitelist=105, 34
authorizationWhitelist=
migrateAuthFromV1Enabled=true
rocketmqHome=/opt/rocketmq
`
	props, err := parseProperties(strings.NewReader(conf))
	require.NoError(t, err)
	var o broker.Options
	unknown, err := applyProperties(&o, props)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.Equal(t, auth.Config{
		AuthenticationEnabled:   true,
		AuthorizationEnabled:    true,
		AuthenticationWhitelist: map[int]bool{105: true, 34: true},
		AuthorizationWhitelist:  map[int]bool{},
		InitUser:                &auth.InitUser{Username: "rocketmq", Password: "12345678"},
		Inner:                   &auth.Credentials{AccessKey: "rocketmq", SecretKey: "12345678"},
		MigrateFromV1:           true,
		V1File:                  "/opt/rocketmq/conf/plain_acl.yml",
	}, o.Auth)
}

// TestApplyProperties_AuthRefusesOtherProviders: any provider but
// Apache's built-in one, bad JSON or bad codes refuse to start; secrets do
// not appear in the error.
func TestApplyProperties_AuthRefusesOtherProviders(t *testing.T) {
	for _, line := range []string{
		"authenticationProvider=com.example.MyProvider",
		"authorizationMetadataProvider=org.apache.rocketmq.acl.plain.PlainAccessValidator",
		"authenticationEnabled=yes",
		`initAuthenticationUser={"username":"root"}`,
		`innerClientAuthenticationCredentials={"accessKey":"a","secretKey":"topsecret"`,
		"authenticationWhitelist=10,send",
	} {
		props, err := parseProperties(strings.NewReader(line))
		require.NoError(t, err)
		var o broker.Options
		_, err = applyProperties(&o, props)
		require.Error(t, err, line)
		require.NotContains(t, err.Error(), "topsecret")
	}
}
