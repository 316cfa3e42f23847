package admin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// Credentials makes a Remoting BeforeRequest hook that signs every
// request with ak/sk as RocketMQ's clients do (AccessKey and Signature ext
// fields), for brokers and name servers with authentication on.
func Credentials(ak, sk string) func(*remoting.Command) {
	return func(cmd *remoting.Command) { auth.SignCommand(cmd, ak, sk) }
}

func userBody(u auth.UserInfo) ([]byte, error) { return json.Marshal(u) }

// CreateUser makes a user on a broker (AUTH_CREATE_USER).
func (c *Client) CreateUser(ctx context.Context, addr string, u auth.UserInfo) error {
	body, err := userBody(u)
	if err != nil {
		return err
	}
	_, err = c.broker(ctx, addr, remoting.AuthCreateUser, map[string]string{"username": u.Username}, body)
	return err
}

// UpdateUser changes a user's password, type or status: the fields set
// in u (AUTH_UPDATE_USER).
func (c *Client) UpdateUser(ctx context.Context, addr string, u auth.UserInfo) error {
	body, err := userBody(u)
	if err != nil {
		return err
	}
	_, err = c.broker(ctx, addr, remoting.AuthUpdateUser, map[string]string{"username": u.Username}, body)
	return err
}

// DeleteUser deletes a user and its ACL (AUTH_DELETE_USER).
func (c *Client) DeleteUser(ctx context.Context, addr, username string) error {
	_, err := c.broker(ctx, addr, remoting.AuthDeleteUser, map[string]string{"username": username}, nil)
	return err
}

// fetch calls a broker and decodes the JSON body of its answer into a T;
// ok is false for an answer without a body (nothing found).
func fetch[T any](c *Client, ctx context.Context, addr string, code int, ext map[string]string) (v T, ok bool, err error) {
	resp, err := c.broker(ctx, addr, code, ext, nil)
	if err != nil || len(resp.Body) == 0 {
		return v, false, err
	}
	if err := json.Unmarshal(resp.Body, &v); err != nil {
		return v, false, fmt.Errorf("admin: answer to request code %d from %s: %w", code, addr, err)
	}
	return v, true, nil
}

// GetUser returns a user (never its password); ok is false when there is
// none (AUTH_GET_USER).
func (c *Client) GetUser(ctx context.Context, addr, username string) (auth.UserInfo, bool, error) {
	return fetch[auth.UserInfo](c, ctx, addr, remoting.AuthGetUser, map[string]string{"username": username})
}

// ListUsers returns the users whose names contain filter
// (AUTH_LIST_USER).
func (c *Client) ListUsers(ctx context.Context, addr, filter string) ([]auth.UserInfo, error) {
	out, _, err := fetch[[]auth.UserInfo](c, ctx, addr, remoting.AuthListUser, map[string]string{"filter": filter})
	return out, err
}

// PutACL merges acl's entries into its subject's ACL: AUTH_CREATE_ACL,
// or AUTH_UPDATE_ACL with update.
func (c *Client) PutACL(ctx context.Context, addr string, acl auth.AclInfo, update bool) error {
	body, err := json.Marshal(acl)
	if err != nil {
		return err
	}
	code := remoting.AuthCreateACL
	if update {
		code = remoting.AuthUpdateACL
	}
	_, err = c.broker(ctx, addr, code, map[string]string{"subject": acl.Subject}, body)
	return err
}

// DeleteACL removes the entry of resource ("" for every entry) of policy
// type policyType ("" for both) from subject's ACL (AUTH_DELETE_ACL).
func (c *Client) DeleteACL(ctx context.Context, addr, subject, policyType, resource string) error {
	ext := map[string]string{"subject": subject}
	if policyType != "" {
		ext["policyType"] = policyType
	}
	if resource != "" {
		ext["resource"] = resource
	}
	_, err := c.broker(ctx, addr, remoting.AuthDeleteACL, ext, nil)
	return err
}

// GetACL returns subject's ACL; ok is false when it has none
// (AUTH_GET_ACL).
func (c *Client) GetACL(ctx context.Context, addr, subject string) (auth.AclInfo, bool, error) {
	return fetch[auth.AclInfo](c, ctx, addr, remoting.AuthGetACL, map[string]string{"subject": subject})
}

// ListACLs returns the ACLs whose subject contains subjectFilter, with
// only the entries whose resource contains resourceFilter
// (AUTH_LIST_ACL).
func (c *Client) ListACLs(ctx context.Context, addr, subjectFilter, resourceFilter string) ([]auth.AclInfo, error) {
	ext := map[string]string{"subjectFilter": subjectFilter, "resourceFilter": resourceFilter}
	out, _, err := fetch[[]auth.AclInfo](c, ctx, addr, remoting.AuthListACL, ext)
	return out, err
}
