// Package iam is the local AWS endpoint's IAM: the instance-profile and role
// operations Karpenter calls, on IAM's awsQuery wire protocol (form-encoded
// Action=..&Version=2010-05-08, XML answers in the
// https://iam.amazonaws.com/doc/2010-05-08/ namespace, <ErrorResponse> errors),
// for an unmodified aws-sdk-go-v2 IAM client.
//
// Modelled:
//   - GetInstanceProfile, CreateInstanceProfile (Name, Path, Tags),
//     TagInstanceProfile, AddRoleToInstanceProfile,
//     RemoveRoleFromInstanceProfile, DeleteInstanceProfile,
//     ListInstanceProfiles (PathPrefix, Marker/MaxItems 1-1000, IsTruncated;
//     no tags in listings, as IAM's listing operations omit them), GetRole.
//   - Names are unique regardless of case and match [\w+=,.@-]+ (profiles at
//     most 128 characters, roles 64); paths are "/" or "/.../" of printable
//     ASCII, at most 512 characters; tag keys and values follow IAM's
//     patterns and lengths, at most 50 tags per profile (LimitExceeded), no
//     duplicate keys in one request (InvalidInput).
//   - Errors with IAM's codes and statuses: NoSuchEntity 404,
//     EntityAlreadyExists 409, LimitExceeded 409 (an instance profile holds at
//     most one role), DeleteConflict 409 (profile still holds a role),
//     ValidationError 400 (missing or malformed parameter, bad Marker),
//     InvalidAction 400 (any other action or version).
//   - Requests must be SigV4-signed for service "iam" in the configured
//     region, us-east-1 by default: MissingAuthenticationToken,
//     IncompleteSignature or SignatureDoesNotMatch (HTTP 403) otherwise.
//   - Go API: AddRole seeds roles; InstanceProfiles lists profiles for leak
//     checks.
//
// Not modelled: role creation over the wire, policies and PassRole
// permissions, UntagInstanceProfile, ListInstanceProfilesForRole, IAM's
// eventual consistency, AssumeRolePolicyDocument, RoleLastUsed,
// PermissionsBoundary, account quotas on the number of profiles, IAM's real
// request quotas and signature verification. SetThrottle refuses a fraction
// of the requests with Throttling (HTTP 400, type Sender) right after
// authentication.
package iam
