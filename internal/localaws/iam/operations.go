package iam

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Wire shapes of IAM's XML answers.
type (
	xmlTag struct {
		Key   string
		Value string
	}
	xmlTags struct {
		Member []xmlTag `xml:"member"`
	}
	xmlRole struct {
		Path       string
		RoleName   string
		RoleId     string
		Arn        string
		CreateDate string
	}
	xmlRoles struct {
		Member []xmlRole `xml:"member"`
	}
	xmlProfile struct {
		Path                string
		InstanceProfileName string
		InstanceProfileId   string
		Arn                 string
		CreateDate          string
		Roles               xmlRoles
		Tags                *xmlTags `xml:",omitempty"`
	}
	xmlProfiles struct {
		Member []xmlProfile `xml:"member"`
	}
)

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func toXMLRole(r *Role) xmlRole {
	return xmlRole{Path: r.Path, RoleName: r.Name, RoleId: r.ID, Arn: r.ARN, CreateDate: isoTime(r.CreateDate)}
}

// toXML renders p; tags are left out of list answers, as IAM does.
func (s *Service) toXML(p *profile, withTags bool) xmlProfile {
	out := xmlProfile{Path: p.Path, InstanceProfileName: p.Name, InstanceProfileId: p.ID, Arn: p.ARN, CreateDate: isoTime(p.CreateDate), Roles: xmlRoles{Member: []xmlRole{}}}
	for _, name := range p.Roles {
		if r, ok := s.roles[strings.ToLower(name)]; ok {
			out.Roles.Member = append(out.Roles.Member, toXMLRole(r))
		}
	}
	if withTags && len(p.tagKeys) > 0 {
		out.Tags = &xmlTags{}
		for _, k := range p.tagKeys {
			out.Tags.Member = append(out.Tags.Member, xmlTag{Key: k, Value: p.Tags[k]})
		}
	}
	return out
}

// lookupProfile finds a profile by its case-insensitive name.
func (s *Service) lookupProfile(name string) (*profile, *Error) {
	p, ok := s.profiles[strings.ToLower(name)]
	if !ok {
		return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
	}
	return p, nil
}

// getInstanceProfile answers GetInstanceProfile.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetInstanceProfile.html
func (s *Service) getInstanceProfile(f form) (any, *Error) {
	name, e := f.name("InstanceProfileName", "instanceProfileName", 128)
	if e != nil {
		return nil, e
	}
	p, e := s.lookupProfile(name)
	if e != nil {
		return nil, e
	}
	return struct{ InstanceProfile xmlProfile }{s.toXML(p, true)}, nil
}

// createInstanceProfile answers CreateInstanceProfile.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateInstanceProfile.html
//
// Names are unique regardless of case (EntityAlreadyExists, 409); Path
// defaults to "/" and must be "/" or "/.../" of printable ASCII, at most 512
// characters; at most 50 tags with distinct keys.
func (s *Service) createInstanceProfile(f form) (any, *Error) {
	name, e := f.name("InstanceProfileName", "instanceProfileName", 128)
	if e != nil {
		return nil, e
	}
	path, ok := f.get("Path")
	if !ok {
		path = "/"
	}
	if len(path) < 1 || len(path) > 512 || !pathText.MatchString(path) {
		return nil, validationError("Value '%s' at 'path' failed to satisfy constraint: Member must satisfy regular expression pattern: (\\u002F)|(\\u002F[\\u0021-\\u007E]+\\u002F)", path)
	}
	tags, e := f.tags()
	if e != nil {
		return nil, e
	}
	if _, exists := s.profiles[strings.ToLower(name)]; exists {
		return nil, &Error{Status: http.StatusConflict, Code: "EntityAlreadyExists", Message: fmt.Sprintf("Instance Profile %s already exists.", name)}
	}
	p := &profile{InstanceProfile: InstanceProfile{Name: name, Path: path, ARN: "arn:aws:iam::" + s.account + ":instance-profile" + path + name,
		CreateDate: s.clock.Now().UTC(), Roles: []string{}, Tags: map[string]string{}}}
	if e := p.addTags(tags); e != nil {
		return nil, e
	}
	s.seq++
	p.ID = fmt.Sprintf("AIPA%017X", s.seq)
	s.profiles[strings.ToLower(name)] = p
	return struct{ InstanceProfile xmlProfile }{s.toXML(p, true)}, nil
}

// addTags merges tags into p (a key already present gets the new value). More
// than 50 tags in all is LimitExceeded; a key twice in one request is InvalidInput.
func (p *profile) addTags(tags [][2]string) *Error {
	seen := map[string]bool{}
	added := 0
	for _, t := range tags {
		if seen[strings.ToLower(t[0])] {
			return &Error{Status: http.StatusBadRequest, Code: "InvalidInput", Message: "Duplicate tag keys found. Please note that Tag keys are case insensitive."}
		}
		seen[strings.ToLower(t[0])] = true
		if _, ok := p.Tags[t[0]]; !ok {
			added++
		}
	}
	if len(p.Tags)+added > maxTags {
		return &Error{Status: http.StatusConflict, Code: "LimitExceeded", Message: fmt.Sprintf("The number of tags has reached the maximum limit of %d.", maxTags)}
	}
	for _, t := range tags {
		if _, ok := p.Tags[t[0]]; !ok {
			p.tagKeys = append(p.tagKeys, t[0])
		}
		p.Tags[t[0]] = t[1]
	}
	return nil
}

// tagInstanceProfile answers TagInstanceProfile.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_TagInstanceProfile.html
func (s *Service) tagInstanceProfile(f form) (any, *Error) {
	name, e := f.name("InstanceProfileName", "instanceProfileName", 128)
	if e != nil {
		return nil, e
	}
	tags, e := f.tags()
	if e != nil {
		return nil, e
	}
	if len(tags) == 0 {
		return nil, validationError("Value null at 'tags' failed to satisfy constraint: Member must not be null")
	}
	p, e := s.lookupProfile(name)
	if e != nil {
		return nil, e
	}
	return nil, p.addTags(tags)
}

// addRoleToInstanceProfile answers AddRoleToInstanceProfile.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_AddRoleToInstanceProfile.html
//
// An unknown profile or role is NoSuchEntity; a profile that already has a
// role (this one or another) is LimitExceeded, as a profile holds one role.
func (s *Service) addRoleToInstanceProfile(f form) (any, *Error) {
	name, e := f.name("InstanceProfileName", "instanceProfileName", 128)
	if e != nil {
		return nil, e
	}
	roleName, e := f.name("RoleName", "roleName", 64)
	if e != nil {
		return nil, e
	}
	p, e := s.lookupProfile(name)
	if e != nil {
		return nil, e
	}
	r, ok := s.roles[strings.ToLower(roleName)]
	if !ok {
		return nil, noSuchEntity("The role with name %s cannot be found.", roleName)
	}
	if len(p.Roles) >= maxRolesPerProfile {
		return nil, &Error{Status: http.StatusConflict, Code: "LimitExceeded", Message: fmt.Sprintf("Cannot exceed quota for InstanceSessionsPerInstanceProfile: %d", maxRolesPerProfile)}
	}
	p.Roles = append(p.Roles, r.Name)
	return nil, nil
}

// removeRoleFromInstanceProfile answers RemoveRoleFromInstanceProfile.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_RemoveRoleFromInstanceProfile.html
//
// An unknown profile, or a role the profile does not hold, is NoSuchEntity.
func (s *Service) removeRoleFromInstanceProfile(f form) (any, *Error) {
	name, e := f.name("InstanceProfileName", "instanceProfileName", 128)
	if e != nil {
		return nil, e
	}
	roleName, e := f.name("RoleName", "roleName", 64)
	if e != nil {
		return nil, e
	}
	p, e := s.lookupProfile(name)
	if e != nil {
		return nil, e
	}
	for i, held := range p.Roles {
		if strings.EqualFold(held, roleName) {
			p.Roles = append(p.Roles[:i], p.Roles[i+1:]...)
			return nil, nil
		}
	}
	return nil, noSuchEntity("The role with name %s cannot be found.", roleName)
}

// deleteInstanceProfile answers DeleteInstanceProfile.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_DeleteInstanceProfile.html
//
// A profile that still holds a role is DeleteConflict (409).
func (s *Service) deleteInstanceProfile(f form) (any, *Error) {
	name, e := f.name("InstanceProfileName", "instanceProfileName", 128)
	if e != nil {
		return nil, e
	}
	p, e := s.lookupProfile(name)
	if e != nil {
		return nil, e
	}
	if len(p.Roles) > 0 {
		return nil, &Error{Status: http.StatusConflict, Code: "DeleteConflict", Message: "Cannot delete entity, must remove roles from instance profile first."}
	}
	delete(s.profiles, strings.ToLower(name))
	return nil, nil
}

// listInstanceProfiles answers ListInstanceProfiles.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListInstanceProfiles.html
//
// PathPrefix (default "/") selects profiles whose path starts with it;
// MaxItems is 1-1000 (default 100); Marker continues a truncated listing.
// Tags are not returned, as IAM's listing operations leave them out.
func (s *Service) listInstanceProfiles(f form) (any, *Error) {
	prefix, ok := f.get("PathPrefix")
	if !ok {
		prefix = "/"
	}
	if len(prefix) < 1 || len(prefix) > 512 || !strings.HasPrefix(prefix, "/") {
		return nil, validationError("Value '%s' at 'pathPrefix' failed to satisfy constraint: Member must satisfy regular expression pattern: \\u002F[\\u0021-\\u007F]*", prefix)
	}
	maxItems := 100
	if v, ok := f.get("MaxItems"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, validationError("Value '%s' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000", v)
		}
		maxItems = n
	}
	after := ""
	if marker, ok := f.get("Marker"); ok {
		b, err := base64.RawURLEncoding.DecodeString(marker)
		if err != nil || len(b) == 0 {
			return nil, &Error{Status: http.StatusBadRequest, Code: "ValidationError", Message: "Invalid Marker."}
		}
		after = string(b)
	}
	result := struct {
		InstanceProfiles xmlProfiles
		IsTruncated      bool
		Marker           string `xml:",omitempty"`
	}{InstanceProfiles: xmlProfiles{Member: []xmlProfile{}}}
	for _, key := range s.sortedProfiles() {
		p := s.profiles[key]
		if key <= after || !strings.HasPrefix(p.Path, prefix) {
			continue
		}
		if len(result.InstanceProfiles.Member) == maxItems {
			result.IsTruncated = true
			result.Marker = base64.RawURLEncoding.EncodeToString([]byte(strings.ToLower(result.InstanceProfiles.Member[maxItems-1].InstanceProfileName)))
			break
		}
		result.InstanceProfiles.Member = append(result.InstanceProfiles.Member, s.toXML(p, false))
	}
	return result, nil
}

// getRole answers GetRole.
//
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetRole.html
func (s *Service) getRole(f form) (any, *Error) {
	name, e := f.name("RoleName", "roleName", 64)
	if e != nil {
		return nil, e
	}
	r, ok := s.roles[strings.ToLower(name)]
	if !ok {
		return nil, noSuchEntity("The role with name %s cannot be found.", name)
	}
	return struct{ Role xmlRole }{toXMLRole(r)}, nil
}
