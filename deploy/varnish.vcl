vcl 4.1;
# Varnish in front of Plinth, for more than one machine (README: "A cache tier in front"). Debian's
# `varnish` 7.1 and `varnish-modules` (xkey). Start Plinth with PLINTH_PURGE_URLS naming each Varnish
# (http://127.0.0.1:6081/): published files then carry `Surrogate-Control` and `xkey: <websiteId>`,
# and every publish, rollback, unpublish, suspension, deletion, domain or password change sends a
# PURGE with `xkey-purge: <websiteId>`. Tested by test/http/varnish.test.ts with this file, the
# backend's port replaced.

import std;
import xkey;

# Plinth at its default address: edit this one line.
backend plinth {
    .host = "127.0.0.1";
    .port = "8080";
}

# Who may purge: the Plinth servers.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(403, "Not allowed to purge"));
        }
        if (!req.http.xkey-purge) {
            return (synth(400, "Name the surrogate keys to purge in xkey-purge"));
        }
        set req.http.n-gone = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Purged " + req.http.n-gone + " objects"));
    }
    # The API, the dashboard, form posts, analytics and anything carrying credentials go straight
    # to Plinth: only what Plinth marks with Surrogate-Control is ever kept (vcl_backend_response).
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (req.http.Authorization || req.http.Cookie) {
        return (pass);
    }
}

sub vcl_backend_response {
    # Pages (HTML) always go to Plinth, so its analytics beacon counts every page view; the files
    # they load (scripts, styles, images, fonts, media) are kept here. To keep pages here too, drop
    # this test: page views served from the cache are then not counted.
    # Uncacheable answers are remembered as such for two minutes ("hit-for-miss", as Varnish's
    # builtin VCL does): with a TTL of 0 every request for the URL would queue behind the one fetch
    # under way (measured: 2,300 requests/s through to Plinth instead of tens of thousands).
    if (beresp.http.Content-Type ~ "^text/html") {
        set beresp.uncacheable = true;
        set beresp.ttl = 120s;
        unset beresp.http.Surrogate-Control;
        return (deliver);
    }
    # Plinth's published, public files say how long a shared cache may keep them; nothing else
    # (drafts, API answers, password pages, personal pages) is kept.
    if (beresp.http.Surrogate-Control ~ "max-age=[0-9]+") {
        set beresp.ttl = std.duration(regsub(beresp.http.Surrogate-Control, ".*max-age=([0-9]+).*", "\1s"), 0s);
        set beresp.grace = 10s;
        unset beresp.http.Surrogate-Control;
        unset beresp.http.Set-Cookie;
    } else {
        set beresp.uncacheable = true;
        set beresp.ttl = 120s;
    }
    return (deliver);
}

sub vcl_deliver {
    # Whether this answer came from the cache (for people and tests); the keys stay inside.
    if (obj.hits > 0) {
        set resp.http.X-Cache = "hit";
    } else {
        set resp.http.X-Cache = "miss";
    }
    unset resp.http.xkey;
}
