package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/internal/vfs"
	"github.com/rocketstore/rocketstore/server/protocol"
)

// Identity is a broker's controller-assigned id as persisted in
// storePathBrokerIdentity ("cluster#brokerName#id"; the temp file written
// between GET_NEXT_BROKER_ID and APPLY_BROKER_ID adds "#registerCheckCode").
type Identity struct {
	Cluster    string
	BrokerName string
	BrokerID   int64
	// CheckCode is set in the temp file only.
	CheckCode string
}

func (i Identity) encode(temp bool) string {
	s := i.Cluster + "#" + i.BrokerName + "#" + strconv.FormatInt(i.BrokerID, 10)
	if temp {
		s += "#" + i.CheckCode
	}
	return s
}

// ParseIdentity reads an identity file's text; temp says whether it is
// the temp form with a check code.
func ParseIdentity(s string, temp bool) (Identity, error) {
	parts := strings.Split(strings.TrimSpace(s), "#")
	want := 3
	if temp {
		want = 4
	}
	if len(parts) != want || parts[0] == "" || parts[1] == "" {
		return Identity{}, fmt.Errorf("broker identity %q: want %d '#'-separated fields", s, want)
	}
	id, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || id < protocol.FirstControllerBrokerID {
		return Identity{}, fmt.Errorf("broker identity %q: bad id", s)
	}
	out := Identity{Cluster: parts[0], BrokerName: parts[1], BrokerID: id}
	if temp {
		if parts[3] == "" {
			return Identity{}, fmt.Errorf("broker identity %q: no register check code", s)
		}
		out.CheckCode = parts[3]
	}
	return out, nil
}

// readIdentity reads an identity file; ok is false when it does not exist.
func readIdentity(path string, temp bool) (Identity, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, false, nil
	}
	if err != nil {
		return Identity{}, false, err
	}
	id, err := ParseIdentity(string(b), temp)
	return id, err == nil, err
}

// writeIdentity writes an identity file crash-safely (vfs.WriteFile:
// temp file, fsync, rename, folder fsync).
func writeIdentity(path string, id Identity, temp bool) error {
	return vfs.WriteFile(vfs.OS{}, path, []byte(id.encode(temp)))
}
