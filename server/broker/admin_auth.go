package broker

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/server/auth"
	"github.com/rocketstore/rocketstore/server/remoting"
)

// registerAuthProcessors serves AUTH_CREATE_USER ... AUTH_LIST_ACL
// (3001-3010) as AdminBrokerProcessor does, safer: with authentication
// on, only a Super user may call them (whatever the ACLs say); a Super
// user is made, changed or deleted only by a Super user who
// authenticated (a missing AccessKey is never taken as Super); answers
// never carry a password.
func (b *Broker) registerAuthProcessors() {
	for code, f := range map[int]func(*remoting.Request) *remoting.Command{
		remoting.AuthCreateUser: b.createUser,
		remoting.AuthUpdateUser: b.updateUser,
		remoting.AuthDeleteUser: b.deleteUser,
		remoting.AuthGetUser:    b.getUser,
		remoting.AuthListUser:   b.listUser,
		remoting.AuthCreateACL:  b.putACL,
		remoting.AuthUpdateACL:  b.putACL,
		remoting.AuthDeleteACL:  b.deleteACL,
		remoting.AuthGetACL:     b.getACL,
		remoting.AuthListACL:    b.listACL,
	} {
		b.srv.RegisterFunc(code, func(_ context.Context, req *remoting.Request) *remoting.Command {
			if b.authority.Config().AuthenticationEnabled && !b.authority.IsSuper(auth.Caller(req.Command)) {
				return remoting.NewResponse(remoting.NoPermission, "The auth admin requests are for super users only")
			}
			return f(req)
		})
	}
}

// callerIsSuper reports whether the request comes from an authenticated
// Super user: authentication on (the gate verified the AccessKey) and the
// AccessKey a Super user's.
func (b *Broker) callerIsSuper(req *remoting.Request) bool {
	return b.authority.Config().AuthenticationEnabled && b.authority.IsSuper(auth.Caller(req.Command))
}

// authError answers a store error: NO_PERMISSION with its words for what
// upstream throws as Authentication/AuthorizationException (invalid
// input, existing or missing user or ACL), SYSTEM_ERROR otherwise.
func (b *Broker) authError(err error) *remoting.Command {
	switch {
	case errors.Is(err, auth.ErrInvalid), errors.Is(err, auth.ErrUserExists), errors.Is(err, auth.ErrUserNotFound), errors.Is(err, auth.ErrACLNotFound):
		return remoting.NewResponse(remoting.NoPermission, strings.TrimPrefix(err.Error(), "auth: "))
	}
	b.log.Error("auth admin request failed", "err", err)
	return remoting.NewResponse(remoting.SystemError, "An system error occurred, please try again later.")
}

func jsonBody(v any) *remoting.Command {
	body, err := json.Marshal(v)
	if err != nil {
		return errResponse(remoting.SystemError, "encode: %v", err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

func blankUsername() *remoting.Command {
	return remoting.NewResponse(remoting.InvalidParameter, "The username is blank")
}

// userBody reads the UserInfo of a create or update, named by the header.
func userBody(req *remoting.Request) (auth.UserInfo, *remoting.Command) {
	var ui auth.UserInfo
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &ui); err != nil {
			return ui, remoting.NewResponse(remoting.InvalidParameter, "The body of user is invalid: "+err.Error())
		}
	}
	ui.Username = req.Ext("username")
	return ui, nil
}

func (b *Broker) createUser(req *remoting.Request) *remoting.Command {
	ui, bad := userBody(req)
	if bad != nil {
		return bad
	}
	if ui.Username == "" {
		return blankUsername()
	}
	u := auth.User{Name: ui.Username, Password: ui.Password}
	var err error
	if u.Type, err = auth.ParseUserType(ui.UserType); err == nil {
		u.Disabled, err = auth.ParseUserStatus(ui.UserStatus)
	}
	if err != nil {
		return b.authError(err)
	}
	if u.Type == auth.Super && !b.callerIsSuper(req) {
		return remoting.NewResponse(remoting.SystemError, "The super user can only be create by super user")
	}
	if err := b.authority.Store().CreateUser(u); err != nil {
		return b.authError(err)
	}
	b.log.Info("user created", "user", u.Name, "type", u.Type, "by", auth.Caller(req.Command))
	return remoting.NewResponse(remoting.Success, "")
}

// updateUser changes what the body sets: password, userType, userStatus
// (an empty field keeps the old value, as UserConverter leaves it null).
func (b *Broker) updateUser(req *remoting.Request) *remoting.Command {
	ui, bad := userBody(req)
	if bad != nil {
		return bad
	}
	if ui.Username == "" {
		return blankUsername()
	}
	old, ok := b.authority.Store().User(ui.Username)
	if !ok {
		return b.authError(auth.ErrUserNotFound)
	}
	toSuper := strings.EqualFold(ui.UserType, "Super")
	if (old.Type == auth.Super || toSuper) && !b.callerIsSuper(req) {
		return remoting.NewResponse(remoting.SystemError, "The super user can only be update by super user")
	}
	err := b.authority.Store().UpdateUser(ui.Username, func(u *auth.User) error {
		var err error
		if ui.Password != "" {
			u.Password = ui.Password
		}
		if ui.UserType != "" {
			if u.Type, err = auth.ParseUserType(ui.UserType); err != nil {
				return err
			}
		}
		if ui.UserStatus != "" {
			u.Disabled, err = auth.ParseUserStatus(ui.UserStatus)
		}
		return err
	})
	if err != nil {
		return b.authError(err)
	}
	b.log.Info("user updated", "user", ui.Username, "by", auth.Caller(req.Command))
	return remoting.NewResponse(remoting.Success, "")
}

// deleteUser deletes a user and its ACL; an unknown user is SUCCESS, as
// upstream.
func (b *Broker) deleteUser(req *remoting.Request) *remoting.Command {
	name := req.Ext("username")
	u, ok := b.authority.Store().User(name)
	if !ok {
		return remoting.NewResponse(remoting.Success, "")
	}
	if u.Type == auth.Super && !b.callerIsSuper(req) {
		return remoting.NewResponse(remoting.NoPermission, "The super user can only be update by super user")
	}
	if err := b.authority.Store().DeleteUser(name); err != nil && !errors.Is(err, auth.ErrUserNotFound) {
		return b.authError(err)
	}
	b.log.Info("user deleted", "user", name, "by", auth.Caller(req.Command))
	return remoting.NewResponse(remoting.Success, "")
}

// getUser answers the UserInfo without its password; an unknown user is
// SUCCESS without a body, as upstream.
func (b *Broker) getUser(req *remoting.Request) *remoting.Command {
	name := strings.TrimSpace(req.Ext("username"))
	if name == "" {
		return blankUsername()
	}
	u, ok := b.authority.Store().User(name)
	if !ok {
		return remoting.NewResponse(remoting.Success, "")
	}
	return jsonBody(u.Info())
}

func (b *Broker) listUser(req *remoting.Request) *remoting.Command {
	users := b.authority.Store().Users(req.Ext("filter"))
	if len(users) == 0 {
		return remoting.NewResponse(remoting.Success, "")
	}
	out := make([]auth.UserInfo, 0, len(users))
	for i := range users {
		out = append(out, users[i].Info())
	}
	return jsonBody(out)
}

// putACL is AUTH_CREATE_ACL and AUTH_UPDATE_ACL: the body's entries merge
// into the subject's ACL (an entry replaces the one of its resource).
func (b *Broker) putACL(req *remoting.Request) *remoting.Command {
	var info auth.AclInfo
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &info); err != nil {
			return remoting.NewResponse(remoting.InvalidParameter, "The body of acl is invalid: "+err.Error())
		}
	}
	if len(info.Policies) == 0 {
		return remoting.NewResponse(remoting.NoPermission, "The body of acl is null")
	}
	if info.Subject == "" {
		info.Subject = req.Ext("subject")
	}
	user, acl, err := info.Parse()
	if err != nil {
		return b.authError(err)
	}
	if err := b.authority.Store().PutACL(user, acl); err != nil {
		return b.authError(err)
	}
	b.log.Info("acl updated", "subject", info.Subject, "by", auth.Caller(req.Command))
	return remoting.NewResponse(remoting.Success, "")
}

// deleteACL removes the entry of a resource, a policy type's entries, or
// (with neither) the subject's whole ACL.
func (b *Broker) deleteACL(req *remoting.Request) *remoting.Command {
	user, err := auth.ParseSubject(req.Ext("subject"))
	if err != nil {
		return b.authError(err)
	}
	var pt *auth.PolicyType
	if s := req.Ext("policyType"); s != "" {
		t, err := auth.ParsePolicyType(s)
		if err != nil {
			return b.authError(err)
		}
		pt = &t
	}
	var res *auth.Resource
	if s := req.Ext("resource"); s != "" {
		r, err := auth.ParseResource(s)
		if err != nil {
			return b.authError(err)
		}
		res = &r
	}
	if err := b.authority.Store().DeleteACL(user, pt, res); err != nil {
		return b.authError(err)
	}
	b.log.Info("acl deleted", "subject", req.Ext("subject"), "by", auth.Caller(req.Command))
	return remoting.NewResponse(remoting.Success, "")
}

func (b *Broker) getACL(req *remoting.Request) *remoting.Command {
	user, err := auth.ParseSubject(req.Ext("subject"))
	if err != nil {
		return b.authError(err)
	}
	acl, ok := b.authority.Store().ACL(user)
	if !ok {
		return remoting.NewResponse(remoting.Success, "")
	}
	return jsonBody(acl.Info(user))
}

func (b *Broker) listACL(req *remoting.Request) *remoting.Command {
	acls := b.authority.Store().ACLs(req.Ext("subjectFilter"), req.Ext("resourceFilter"))
	if len(acls) == 0 {
		return remoting.NewResponse(remoting.Success, "")
	}
	out := make([]auth.AclInfo, 0, len(acls))
	for _, user := range slices.Sorted(maps.Keys(acls)) {
		acl := acls[user]
		out = append(out, acl.Info(user))
	}
	return jsonBody(out)
}
