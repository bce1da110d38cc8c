package ec2

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Image is an AMI.
type Image struct {
	// ID is e.g. ami-0123456789abcdef0; generated when empty.
	ID string
	// Name is the AMI name.
	Name string
	// Description is the AMI description.
	Description string
	// Architecture is x86_64 or arm64 (default x86_64).
	Architecture string
	// CreationDate is when the AMI was registered; the clock's now when zero.
	CreationDate time.Time
	// DeprecationTime is when the AMI is deprecated; zero for never.
	DeprecationTime time.Time
	// OwnerID is the owning account; default the service's account.
	OwnerID string
	// OwnerAlias is e.g. "amazon" for Amazon's public AMIs; empty otherwise.
	OwnerAlias string
	// State is available (default), pending, failed, deregistered, ...
	State string
	// Public tells whether every account may launch the AMI.
	Public bool
	// Tags are the AMI's tags.
	Tags map[string]string
}

// AddImage registers an AMI, e.g. while seeding the account, and returns it
// with its defaults filled in.
func (s *Service) AddImage(img Image) (Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addImageLocked(img)
}

// PublishImage registers a new AMI at run time (for drift tests): it is
// AddImage with CreationDate always the clock's now, so that it sorts as the
// newest image of its name.
func (s *Service) PublishImage(img Image) (Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img.CreationDate = s.now()
	return s.addImageLocked(img)
}

// DeprecateImage sets an AMI's deprecation time.
func (s *Service) DeprecateImage(id string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.imageLocked(id)
	if img == nil {
		return fmt.Errorf("deprecating image %s: not found", id)
	}
	img.DeprecationTime = at.UTC()
	return nil
}

// Images returns every registered AMI in the order they were added.
func (s *Service) Images() []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Image, len(s.st.images))
	for i, img := range s.st.images {
		out[i] = *img
		out[i].Tags = cloneTags(img.Tags)
	}
	return out
}

// imageIDPattern is the form of an AMI id.
var imageIDPattern = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)

// addImageLocked fills an image's defaults and stores it.
func (s *Service) addImageLocked(img Image) (Image, error) {
	if img.ID == "" {
		img.ID = s.newIDLocked("ami")
	}
	if !imageIDPattern.MatchString(img.ID) {
		return Image{}, fmt.Errorf("adding image %q: id must be ami- and 8 or 17 hex digits", img.ID)
	}
	if s.imageLocked(img.ID) != nil {
		return Image{}, fmt.Errorf("adding image %s: already exists", img.ID)
	}
	if img.Architecture == "" {
		img.Architecture = "x86_64"
	}
	if img.OwnerID == "" {
		img.OwnerID = s.cfg.AccountID
	}
	if img.State == "" {
		img.State = "available"
	}
	if img.CreationDate.IsZero() {
		img.CreationDate = s.now()
	}
	img.CreationDate = img.CreationDate.UTC()
	img.Tags = cloneTags(img.Tags)
	s.st.images = append(s.st.images, &img)
	out := img
	out.Tags = cloneTags(img.Tags)
	return out, nil
}

// imageLocked finds an AMI by id.
func (s *Service) imageLocked(id string) *Image {
	for _, img := range s.st.images {
		if img.ID == id {
			return img
		}
	}
	return nil
}

// imageXML is one <item> of DescribeImages' imagesSet.
type imageXML struct {
	ImageID            string  `xml:"imageId"`
	ImageLocation      string  `xml:"imageLocation"`
	ImageState         string  `xml:"imageState"`
	ImageOwnerID       string  `xml:"imageOwnerId"`
	CreationDate       string  `xml:"creationDate"`
	DeprecationTime    string  `xml:"deprecationTime,omitempty"`
	IsPublic           bool    `xml:"isPublic"`
	Architecture       string  `xml:"architecture"`
	ImageType          string  `xml:"imageType"`
	ImageOwnerAlias    string  `xml:"imageOwnerAlias,omitempty"`
	Name               string  `xml:"name"`
	Description        string  `xml:"description,omitempty"`
	RootDeviceType     string  `xml:"rootDeviceType"`
	RootDeviceName     string  `xml:"rootDeviceName"`
	VirtualizationType string  `xml:"virtualizationType"`
	Hypervisor         string  `xml:"hypervisor"`
	EnaSupport         bool    `xml:"enaSupport"`
	BootMode           string  `xml:"bootMode,omitempty"`
	TagSet             *tagSet `xml:"tagSet,omitempty"`
}

// describeImagesResponse is DescribeImages' result.
type describeImagesResponse struct {
	meta
	Images    []imageXML `xml:"imagesSet>item"`
	NextToken string     `xml:"nextToken,omitempty"`
}

// imageFilters are the DescribeImages filters modelled.
var imageFilters = fieldFuncs[*Image]{
	"image-id":            func(i *Image) []string { return one(i.ID) },
	"name":                func(i *Image) []string { return one(i.Name) },
	"description":         func(i *Image) []string { return one(i.Description) },
	"state":               func(i *Image) []string { return one(i.State) },
	"architecture":        func(i *Image) []string { return one(i.Architecture) },
	"owner-id":            func(i *Image) []string { return one(i.OwnerID) },
	"owner-alias":         func(i *Image) []string { return one(i.OwnerAlias) },
	"is-public":           func(i *Image) []string { return one(fmt.Sprint(i.Public)) },
	"image-type":          func(*Image) []string { return one("machine") },
	"virtualization-type": func(*Image) []string { return one("hvm") },
	"root-device-type":    func(*Image) []string { return one("ebs") },
	"creation-date":       func(i *Image) []string { return one(timestamp(i.CreationDate)) },
}

// describeImages serves DescribeImages: ImageId.N, Owner.N (account ids,
// self, amazon), Filter.N, IncludeDeprecated and pagination.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeImages.html
func (s *Service) describeImages(p params) (response, error) {
	ids, err := p.strings("ImageId")
	if err != nil {
		return nil, err
	}
	owners, err := p.strings("Owner")
	if err != nil {
		return nil, err
	}
	includeDeprecated, _, err := p.bool("IncludeDeprecated")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, imageFilters, true)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeImages", 1, 1000)
	if err != nil {
		return nil, err
	}
	if pr.limit && len(ids) > 0 {
		return nil, apiErrorf(400, "InvalidParameterCombination", "The parameter imagesSet cannot be used with the parameter maxResults")
	}
	found := s.st.images
	if len(ids) > 0 {
		found = nil
		var missing []string
		for _, id := range ids {
			if !imageIDPattern.MatchString(id) {
				return nil, apiErrorf(400, "InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
			}
			img := s.imageLocked(id)
			if img == nil {
				missing = append(missing, id)
				continue
			}
			if !slices.Contains(found, img) {
				found = append(found, img)
			}
		}
		if len(missing) > 0 {
			return nil, apiErrorf(400, "InvalidAMIID.NotFound", "The image id '%v' does not exist", missing)
		}
	}
	now := s.now()
	var sel []*Image
	for _, img := range found {
		if !img.Public && img.OwnerID != s.cfg.AccountID {
			continue
		}
		if len(owners) > 0 && !slices.ContainsFunc(owners, func(o string) bool { return s.ownedBy(img, o) }) {
			continue
		}
		// EC2 leaves deprecated AMIs out unless asked for, by id, or owned.
		deprecated := !img.DeprecationTime.IsZero() && !img.DeprecationTime.After(now)
		if deprecated && !includeDeprecated && len(ids) == 0 && img.OwnerID != s.cfg.AccountID {
			continue
		}
		if matches(img, fs, imageFilters, img.Tags) {
			sel = append(sel, img)
		}
	}
	start, end, next := s.window(pr, "DescribeImages", len(sel))
	out := &describeImagesResponse{NextToken: next}
	for _, img := range sel[start:end] {
		x := imageXML{
			ImageID:            img.ID,
			ImageLocation:      img.OwnerID + "/" + img.Name,
			ImageState:         img.State,
			ImageOwnerID:       img.OwnerID,
			CreationDate:       timestamp(img.CreationDate),
			IsPublic:           img.Public,
			Architecture:       img.Architecture,
			ImageType:          "machine",
			ImageOwnerAlias:    img.OwnerAlias,
			Name:               img.Name,
			Description:        img.Description,
			RootDeviceType:     "ebs",
			RootDeviceName:     "/dev/xvda",
			VirtualizationType: "hvm",
			Hypervisor:         "xen",
			EnaSupport:         true,
			TagSet:             toTagSet(img.Tags),
		}
		if !img.DeprecationTime.IsZero() {
			x.DeprecationTime = timestamp(img.DeprecationTime)
		}
		out.Images = append(out.Images, x)
	}
	return out, nil
}

// ownedBy matches an image against one Owners value: self, an alias
// (amazon, aws-marketplace) or an account id.
func (s *Service) ownedBy(img *Image, owner string) bool {
	switch owner {
	case "self":
		return img.OwnerID == s.cfg.AccountID
	case "amazon", "aws-marketplace", "aws-backup-vault":
		return img.OwnerAlias == owner
	}
	return img.OwnerID == owner
}
