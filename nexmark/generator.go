package nexmark

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// Kind is an event's type.
type Kind uint8

const (
	KindPerson Kind = iota
	KindAuction
	KindBid
)

// Person, Auction and Bid are the events' payloads (the reference's fields).
type Person struct {
	ID          int64
	Name, Email string
	CreditCard  string
	City, State string
	DateTime    int64 // unix ms
	Extra       string
}

type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Event is one generated event.
type Event struct {
	ID      int64
	Kind    Kind
	Person  *Person
	Auction *Auction
	Bid     *Bid
}

// Time is the event's time (unix ms).
func (e Event) Time() int64 {
	switch e.Kind {
	case KindPerson:
		return e.Person.DateTime
	case KindAuction:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}

// GenConfig sets the generator's knobs; the zero value is the reference's
// defaults (NexmarkConfiguration).
type GenConfig struct {
	// Seed selects the stream: every field of every event, the channels'
	// URLs and the text that extra fields are cut from.
	Seed uint64
	// Rate is events per second of event time (firstEventRate); default
	// 10,000.
	Rate int
	// InFlightAuctions (numInFlightAuctions, default 100) is how many of the
	// newest auctions a bid that is not for the hot auction picks from, and
	// sets how long auctions run; ActivePeople (numActivePeople, default
	// 1,000) is how many of the newest people a bidder or seller that is
	// not hot is picked from. Together they set the working set of the
	// stateful queries.
	InFlightAuctions int
	ActivePeople     int
	// Start is the unix ms of event 0; default 2015-07-15T00:00:00Z.
	Start int64
}

// The reference's constants: NexmarkConfiguration's defaults, and those of
// GeneratorConfig and the model generators.
const (
	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	totalProportion   = personProportion + auctionProportion + bidProportion
	firstPersonID     = 1000
	firstAuctionID    = 1000
	firstCategoryID   = 10
	numCategories     = 5

	// A bid is for the hot auction unless rand(hotAuctionRatio) is 0; a
	// bidder and a seller are hot unless rand(4) is 0.
	hotAuctionRatio = 2
	hotBiddersRatio = 4
	hotSellersRatio = 4
	// The hot auction, bidder and seller are the first (bidder: second) of
	// the batch of hotBatch newest auctions or people.
	hotBatch = 100
	// Picks that are not hot may name up to idLead people or auctions not
	// made yet.
	idLead = 10

	hotChannelsRatio = 2
	numChannels      = 10_000

	avgPersonBytes  = 200
	avgAuctionBytes = 500
	avgBidBytes     = 100

	// WatermarkLag is how far the watermark trails event time (the
	// reference DDL's WATERMARK ... - INTERVAL '4' SECOND).
	WatermarkLag = 4000 // ms
)

var usStates = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
var cities = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
var firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
var lastNames = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
var hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}

func (c GenConfig) withDefaults() GenConfig {
	if c.Rate <= 0 {
		c.Rate = 10_000
	}
	if c.InFlightAuctions <= 0 {
		c.InFlightAuctions = 100
	}
	if c.ActivePeople <= 0 {
		c.ActivePeople = 1000
	}
	if c.Start == 0 {
		c.Start = time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC).UnixMilli()
	}
	return c
}

// timestamp is the event time of event n, as the reference's
// timestampForEvent: the inter-event delay in µs is a double, the product
// truncated before it is divided into ms.
func (c GenConfig) timestamp(n int64) int64 {
	return c.Start + int64(float64(n)*(1e6/float64(c.Rate)))/1000
}

// lastBase0PersonID is the newest person id (from 0) at event id.
func lastBase0PersonID(id int64) int64 {
	epoch, offset := id/totalProportion, id%totalProportion
	if offset >= personProportion {
		offset = personProportion - 1
	}
	return epoch*personProportion + offset
}

// lastBase0AuctionID is the newest auction id (from 0) at event id.
func lastBase0AuctionID(id int64) int64 {
	epoch, offset := id/totalProportion, id%totalProportion
	switch {
	case offset < personProportion:
		epoch--
		offset = auctionProportion - 1
	case offset >= personProportion+auctionProportion:
		offset = auctionProportion - 1
	default:
		offset -= personProportion
	}
	return epoch*auctionProportion + offset
}

// Generate returns event id.
func (c GenConfig) Generate(id int64) Event {
	c = c.withDefaults()
	rng := rand.New(rand.NewPCG(c.Seed, uint64(id)))
	ts := c.timestamp(id)
	tab := tablesFor(c.Seed)
	offset := id % totalProportion
	switch {
	case offset < personProportion:
		return Event{ID: id, Kind: KindPerson, Person: c.person(rng, tab, id, ts)}
	case offset < personProportion+auctionProportion:
		return Event{ID: id, Kind: KindAuction, Auction: c.auction(rng, tab, id, ts)}
	}
	return Event{ID: id, Kind: KindBid, Bid: c.bid(rng, tab, id, ts)}
}

// nextPrice is the reference's log-uniform price in cents:
// Math.round(10^(6U) × 100), from 100 to 100,000,000.
func nextPrice(rng *rand.Rand) int64 {
	return int64(math.Floor(math.Pow(10, rng.Float64()*6)*100 + 0.5))
}

// nextString is the reference's StringsGenerator.nextString: 3 to
// maxLength-1 characters, each special one time in 13 and a lowercase
// letter otherwise, trimmed of spaces at both ends.
func nextString(rng *rand.Rand, maxLength int, special byte) string {
	b := make([]byte, 3+rng.IntN(maxLength-3))
	for i := range b {
		if rng.IntN(13) == 0 {
			b[i] = special
		} else {
			b[i] = byte('a' + rng.IntN(26))
		}
	}
	i, j := 0, len(b)
	for i < j && b[i] == ' ' {
		i++
	}
	for j > i && b[j-1] == ' ' {
		j--
	}
	return string(b[i:j])
}

// nextExtra is the reference's nextExtra: a string that brings an event
// of currentSize bytes to avgSize on average, its length uniform within
// ±20% of the difference, cut from the seed's text.
func nextExtra(rng *rand.Rand, tab *tables, currentSize, avgSize int) string {
	if currentSize > avgSize {
		return ""
	}
	want := avgSize - currentSize
	delta := int(math.Floor(float64(want)*0.2 + 0.5))
	size := want - delta
	if delta > 0 {
		size += rng.IntN(2 * delta)
	}
	off := rng.IntN(len(tab.text) - size)
	return tab.text[off : off+size]
}

// tables are what the reference makes once per process: four hot URLs,
// a URL for each of the 10,000 channels, and the 1 MiB of letters extra
// fields are cut from. Here they follow from the seed, so that every
// process sees the same stream.
type tables struct {
	hotURLs      [4]string
	channelNames [numChannels]string
	channelURLs  [numChannels]string
	text         string
}

var tablesBySeed sync.Map // uint64 → *tables

func tablesFor(seed uint64) *tables {
	if t, ok := tablesBySeed.Load(seed); ok {
		return t.(*tables)
	}
	rng := rand.New(rand.NewPCG(seed, math.MaxUint64))
	t := &tables{}
	for i := range t.hotURLs {
		t.hotURLs[i] = baseURL(rng)
	}
	for i := range t.channelURLs {
		u := baseURL(rng)
		if rng.IntN(10) > 0 {
			u += "&channel_id=" + strconv.Itoa(int(channelIDOf(i)))
		}
		t.channelURLs[i] = u
		t.channelNames[i] = "channel-" + strconv.Itoa(i)
	}
	text := make([]byte, 1<<20)
	for i := range text {
		text[i] = byte('a' + rng.IntN(26))
	}
	t.text = string(text)
	got, _ := tablesBySeed.LoadOrStore(seed, t)
	return got.(*tables)
}

// channelIDOf is the reference's Math.abs(Integer.reverse(i)), with Java's
// overflow: channel 1's id is -2147483648.
func channelIDOf(i int) int32 {
	v := int32(bits.Reverse32(uint32(i)))
	if v < 0 {
		v = -v
	}
	return v
}

// baseURL is a URL with three directories, as the reference's getBaseUrl.
func baseURL(rng *rand.Rand) string {
	return "https://www.nexmark.com/" + nextString(rng, 5, '_') + "/" + nextString(rng, 5, '_') + "/" + nextString(rng, 5, '_') + "/item.htm?query=1"
}

func pick(rng *rand.Rand, s []string) string { return s[rng.IntN(len(s))] }

func (c GenConfig) person(rng *rand.Rand, tab *tables, id, ts int64) *Person {
	p := &Person{ID: lastBase0PersonID(id) + firstPersonID, DateTime: ts}
	p.Name = pick(rng, firstNames) + " " + pick(rng, lastNames)
	p.Email = nextString(rng, 7, ' ') + "@" + nextString(rng, 5, ' ') + ".com"
	card := make([]byte, 0, 19)
	for i := range 4 {
		if i > 0 {
			card = append(card, ' ')
		}
		n := rng.IntN(10_000)
		card = append(card, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
	}
	p.CreditCard = string(card)
	p.City, p.State = pick(rng, cities), pick(rng, usStates)
	p.Extra = nextExtra(rng, tab, personSize(p), avgPersonBytes)
	return p
}

// personSize, auctionSize and bidSize are an event's size before its
// extra field, counted as the reference counts it.
func personSize(p *Person) int {
	return 8 + len(p.Name) + len(p.Email) + len(p.CreditCard) + len(p.City) + len(p.State)
}
func auctionSize(a *Auction) int { return 8 + len(a.ItemName) + len(a.Description) + 5*8 }

const bidSize = 4 * 8

// nextBase0PersonID is a random person among the ActivePeople newest, or
// up to idLead people not made yet.
func (c GenConfig) nextBase0PersonID(rng *rand.Rand, id int64) int64 {
	numPeople := lastBase0PersonID(id) + 1
	active := min(numPeople, int64(c.ActivePeople))
	return numPeople - active + rng.Int64N(active+idLead)
}

// nextBase0AuctionID is a random auction among the InFlightAuctions newest,
// or up to idLead auctions not made yet.
func (c GenConfig) nextBase0AuctionID(rng *rand.Rand, id int64) int64 {
	maxAuction := lastBase0AuctionID(id)
	minAuction := max(0, maxAuction-int64(c.InFlightAuctions))
	return minAuction + rng.Int64N(maxAuction-minAuction+1+idLead)
}

// auctionLength is the reference's nextAuctionLengthMs: 1 + uniform below
// twice the event time until InFlightAuctions more auctions are made.
func (c GenConfig) auctionLength(rng *rand.Rand, id, ts int64) int64 {
	eventsForAuctions := int64(c.InFlightAuctions) * totalProportion / auctionProportion
	horizon := c.timestamp(id+eventsForAuctions) - ts
	return 1 + rng.Int64N(max(2*horizon, 1))
}

func (c GenConfig) auction(rng *rand.Rand, tab *tables, id, ts int64) *Auction {
	a := &Auction{ID: lastBase0AuctionID(id) + firstAuctionID, DateTime: ts}
	if rng.IntN(hotSellersRatio) > 0 {
		a.Seller = (lastBase0PersonID(id) / hotBatch) * hotBatch
	} else {
		a.Seller = c.nextBase0PersonID(rng, id)
	}
	a.Seller += firstPersonID
	a.Category = firstCategoryID + int64(rng.IntN(numCategories))
	a.InitialBid = nextPrice(rng)
	a.Expires = ts + c.auctionLength(rng, id, ts)
	a.ItemName = nextString(rng, 20, ' ')
	a.Description = nextString(rng, 100, ' ')
	a.Reserve = a.InitialBid + nextPrice(rng)
	a.Extra = nextExtra(rng, tab, auctionSize(a), avgAuctionBytes)
	return a
}

func (c GenConfig) bid(rng *rand.Rand, tab *tables, id, ts int64) *Bid {
	b := &Bid{DateTime: ts}
	if rng.IntN(hotAuctionRatio) > 0 {
		b.Auction = (lastBase0AuctionID(id) / hotBatch) * hotBatch
	} else {
		b.Auction = c.nextBase0AuctionID(rng, id)
	}
	b.Auction += firstAuctionID
	if rng.IntN(hotBiddersRatio) > 0 {
		// The second person of the hot batch, so that hot bidders and hot
		// sellers differ.
		b.Bidder = (lastBase0PersonID(id)/hotBatch)*hotBatch + 1
	} else {
		b.Bidder = c.nextBase0PersonID(rng, id)
	}
	// The reference adds FIRST_PERSON_ID twice: a bidder's id is the
	// person's id plus 1,000.
	b.Bidder += 2 * firstPersonID
	b.Price = nextPrice(rng)
	if rng.IntN(hotChannelsRatio) > 0 {
		i := rng.IntN(len(hotChannels))
		b.Channel, b.URL = hotChannels[i], tab.hotURLs[i]
	} else {
		i := rng.IntN(numChannels)
		b.Channel, b.URL = tab.channelNames[i], tab.channelURLs[i]
	}
	b.Extra = nextExtra(rng, tab, bidSize, avgBidBytes)
	return b
}
