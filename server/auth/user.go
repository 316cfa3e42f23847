package auth

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// UserType is Super (allowed everything, ACLs skipped) or Normal.
type UserType uint8

// User types.
const (
	Normal UserType = iota
	Super
)

// String is "Normal" or "Super", as UserInfo's userType.
func (t UserType) String() string {
	if t == Super {
		return "Super"
	}
	return "Normal"
}

// ParseUserType parses "Super" or "Normal" case-insensitively; "" is
// Normal, as upstream's default.
func ParseUserType(s string) (UserType, error) {
	switch {
	case s == "" || strings.EqualFold(s, "Normal"):
		return Normal, nil
	case strings.EqualFold(s, "Super"):
		return Super, nil
	}
	return 0, fmt.Errorf("%w: user type %q: want Super or Normal", ErrInvalid, s)
}

// User is an account: its username is the clients' AccessKey and its
// password their SecretKey.
type User struct {
	Name     string
	Password string
	Type     UserType
	Disabled bool // userStatus "disable": refused at authentication
}

// Status is "enable" or "disable", as UserInfo's userStatus.
func (u *User) Status() string {
	if u.Disabled {
		return "disable"
	}
	return "enable"
}

// ParseUserStatus parses "enable" or "disable" (case-insensitively) into
// Disabled; "" is enable.
func ParseUserStatus(s string) (disabled bool, err error) {
	switch {
	case s == "" || strings.EqualFold(s, "enable"):
		return false, nil
	case strings.EqualFold(s, "disable"):
		return true, nil
	}
	return false, fmt.Errorf("%w: user status %q: want enable or disable", ErrInvalid, s)
}

// Limits of names and passwords.
const (
	maxNameLen     = 128
	maxPasswordLen = 256
)

// validateName checks a username: 1..128 bytes of letters, digits, '-',
// '_', '.' and '@' (an AccessKey as the clients send it; no ':' so that
// "User:name" parses, no spaces).
func validateName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: username must have 1 to %d characters", ErrInvalid, maxNameLen)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == '@':
		default:
			return fmt.Errorf("%w: username %q: only letters, digits, '-', '_', '.' and '@'", ErrInvalid, name)
		}
	}
	return nil
}

// validatePassword checks a password: 1..256 bytes of UTF-8 without
// control characters.
func validatePassword(p string) error {
	if p == "" || len(p) > maxPasswordLen || !utf8.ValidString(p) {
		return fmt.Errorf("%w: password must have 1 to %d bytes of UTF-8", ErrInvalid, maxPasswordLen)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: password has a control character", ErrInvalid)
		}
	}
	return nil
}

// Validate checks the user's name and password.
func (u *User) Validate() error {
	if err := validateName(u.Name); err != nil {
		return err
	}
	return validatePassword(u.Password)
}

// SubjectPrefix starts an ACL subject naming a user ("User:alice").
const SubjectPrefix = "User:"

// ParseSubject returns the username of a subject "User:name" (the type
// matched case-insensitively).
func ParseSubject(s string) (string, error) {
	s = strings.TrimSpace(s)
	typ, name, ok := strings.Cut(s, ":")
	if !ok || !strings.EqualFold(typ, "User") {
		return "", fmt.Errorf("%w: subject %q: want User:name", ErrInvalid, s)
	}
	if err := validateName(name); err != nil {
		return "", err
	}
	return name, nil
}
