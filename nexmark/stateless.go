package nexmark

import (
	"strconv"
	"strings"
	"time"
)

// The stateless queries: q0, q1, q2, q10, q13, q14, q21, q22. Each emits
// at most one row per bid, made from the bid alone.

// hourOf is the SQL's HOUR(dateTime) (UTC).
func hourOf(ms int64) int { return time.UnixMilli(ms).UTC().Hour() }

// dayOf is the SQL's DATE_FORMAT(dateTime, 'yyyy-MM-dd') (UTC).
func dayOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

// hourMinuteOf is the SQL's DATE_FORMAT(dateTime, 'HH:mm') (UTC).
func hourMinuteOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }

// splitIndex is the SQL's SPLIT_INDEX(s, sep, i): the i-th field (from 0)
// with every empty field kept; NULL (written empty, false) past the last.
func splitIndex(s string, sep byte, i int) (string, bool) {
	for ; i > 0; i-- {
		j := strings.IndexByte(s, sep)
		if j < 0 {
			return "", false
		}
		s = s[j+1:]
	}
	if j := strings.IndexByte(s, sep); j >= 0 {
		s = s[:j]
	}
	return s, true
}

// channelID is the SQL's REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)',
// 2): the value of the first channel_id= at the start of url or right
// after a '&', up to the next '&'; false (NULL) if there is none.
func channelID(url string) (string, bool) {
	const name = "channel_id="
	for from := 0; ; {
		i := strings.Index(url[from:], name)
		if i < 0 {
			return "", false
		}
		i += from
		if i == 0 || url[i-1] == '&' {
			v := url[i+len(name):]
			if j := strings.IndexByte(v, '&'); j >= 0 {
				v = v[:j]
			}
			return v, true
		}
		from = i + 1
	}
}

// knownChannelIDs is q21's CASE on lower(channel).
var knownChannelIDs = map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}

// q0: SELECT auction, bidder, price, dateTime, extra FROM bid.
func q0() Query {
	return statelessQuery("q0", func(b *Bid, r *row) bool {
		r.int(b.Auction).int(b.Bidder).int(b.Price).int(b.DateTime).str(b.Extra)
		return true
	})
}

// q1: the price in euros, 0.908 * price, a DECIMAL(23, 3).
func q1() Query {
	return statelessQuery("q1", func(b *Bid, r *row) bool {
		r.int(b.Auction).int(b.Bidder).euros(b.Price).int(b.DateTime).str(b.Extra)
		return true
	})
}

// q2: SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0.
func q2() Query {
	return statelessQuery("q2", func(b *Bid, r *row) bool {
		if b.Auction%123 != 0 {
			return false
		}
		r.int(b.Auction).int(b.Price)
		return true
	})
}

// q10: every bid with the partition columns of the file it would be
// logged to, DATE_FORMAT 'yyyy-MM-dd' and 'HH:mm'; the rows go to the
// sink as every other query's.
func q10() Query {
	return statelessQuery("q10", func(b *Bid, r *row) bool {
		r.int(b.Auction).int(b.Bidder).int(b.Price).int(b.DateTime).str(b.Extra).str(dayOf(b.DateTime)).str(hourMinuteOf(b.DateTime))
		return true
	})
}

// q13: bids joined with the side table on MOD(auction, 10000) = key.
// The reference's side table (SideInputGenerator, 10,000 rows) maps
// key k to the value "k"; it is made here rather than read from a
// file.
func q13() Query {
	return statelessQuery("q13", func(b *Bid, r *row) bool {
		r.int(b.Auction).int(b.Bidder).int(b.Price).int(b.DateTime).str(strconv.FormatInt(b.Auction%10_000, 10))
		return true
	})
}

// q14: bids with 1,000,000 < 0.908 * price < 50,000,000 (compared
// exactly, in thousandths), the time of day, and the count of 'c' in
// extra.
func q14() Query {
	return statelessQuery("q14", func(b *Bid, r *row) bool {
		if thousandths := b.Price * 908; thousandths <= 1_000_000_000 || thousandths >= 50_000_000_000 {
			return false
		}
		kind := "otherTime"
		switch h := hourOf(b.DateTime); {
		case h >= 8 && h <= 18:
			kind = "dayTime"
		case h <= 6 || h >= 20:
			kind = "nightTime"
		}
		r.int(b.Auction).int(b.Bidder).euros(b.Price).str(kind).int(b.DateTime).str(b.Extra).int(int64(strings.Count(b.Extra, "c")))
		return true
	})
}

// q21: the channel id of the four known channels, or the URL's
// channel_id; a bid with neither has no row.
func q21() Query {
	return statelessQuery("q21", func(b *Bid, r *row) bool {
		id, ok := knownChannelIDs[strings.ToLower(b.Channel)]
		if !ok {
			if id, ok = channelID(b.URL); !ok {
				return false
			}
		}
		r.int(b.Auction).int(b.Bidder).int(b.Price).str(b.Channel).str(id)
		return true
	})
}

// q22: the URL's first three directories, SPLIT_INDEX(url, '/', 3..5).
func q22() Query {
	return statelessQuery("q22", func(b *Bid, r *row) bool {
		r.int(b.Auction).int(b.Bidder).int(b.Price).str(b.Channel)
		for i := 3; i <= 5; i++ {
			d, _ := splitIndex(b.URL, '/', i)
			r.str(d)
		}
		return true
	})
}
