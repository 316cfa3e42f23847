// Package auth is access control in the design of Apache RocketMQ 5's ACL
// 2.0: users with passwords (Super or Normal), per-user policies of
// entries on resources (Cluster, Namespace, Topic, Group; literal, prefix
// or any name) and actions (Pub, Sub, Create, Update, Delete, Get, List,
// All), Allow or Deny, narrowed by source IPs; and the HMAC-SHA1 request
// signature the 4.x clients send (ACL 1.0's wire, kept by 2.0).
//
// The pieces are independent of the transport:
//
//   - Authority holds the users and ACLs (a Store) and answers two
//     questions: Authenticate(username, signature, content) and
//     Authorize(username, checks, sourceIP).
//   - RemotingContent builds, from a remoting command, what a remoting
//     client signed (ext field values sorted by key, then the body), and
//     Sign/SignCommand sign as the clients do.
//   - Gate turns an Authority and a mapping of requests to checks into the
//     hook remoting.Server.SetGate runs before every processor.
//
// The gRPC endpoint (server/proxy/auth.go) calls the same Authority:
// CheckV2 takes the username and signature from the "authorization"
// metadata and the signed content from "x-mq-date-time" (as Apache's
// gRPC builder does), authenticates, and authorizes the checks the
// endpoint maps the request message to.
//
// Evaluation, as upstream: a Super user is allowed everything; a Normal
// user's Custom policy entries that match the resource, one of the
// actions and the source IP are ranked (literal name, then prefix —
// longer first —, then any name, then the "*" resource; Deny before
// Allow at equal rank) and the first decides; only when no Custom entry
// matches are the Default policy's entries consulted; no match is a
// refusal. Safer than upstream: a check the mapping marks SuperOnly (a
// request code with no rule) refuses every Normal user, a missing
// credential is never taken as Super, and passwords are never returned.
//
// Users and ACLs live in one JSON file (config/auth.json under the store
// root), written to a temporary file, fsynced, renamed and the folder
// fsynced, with mode 0600; a file that does not parse refuses to open.
package auth
