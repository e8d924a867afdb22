"""The hostile event-log rows and the rows they attack, shared by the modules that publish
them."""

from __future__ import annotations

# acct(login VARCHAR(200) PRIMARY KEY, fullname): logins that break SQL quoted carelessly
# (quotes, backslashes, comment markers, LIKE wildcards, JDBC escapes and placeholders),
# and decoys that a broken read would return instead.
ACCOUNTS = {
    "x' OR '1'='1": "Quote Or",
    "a\\' OR 1=1 -- ": "Backslash Quote Comment",
    "trail\\": "Trailing Backslash",
    "%": "Percent",
    "_": "Underscore",
    'say "hi"': "Double Quotes",
    "back\\\\slash": "Two Backslashes",
    "semi;colon": "Semicolon",
    "it's": "Apostrophe",
    "dollar$$quoted$$": "Dollar Quoted",
    "q?mark": "Question Mark",
    "{fn now()}": "JDBC Escape",
    "$1": "Dollar One",
    "/* c */": "Comment",
    "nl\nline": "Newline",
    "tab\there": "Tab",
    "Zoë ünï": "Unicode",
    "": "Empty",
    "bob": "Bob",
    # decoys: never asked for
    "x": "Decoy X",
    "1": "Decoy One",
    "a": "Decoy A",
    "trail": "Decoy Trail",
    "say": "Decoy Say",
}
DECOYS = ("x", "1", "a", "trail", "say")
# Asked for by a canonical key each (bob is asked for by the collision rows).
QUERIED = [login for login in ACCOUNTS if login not in DECOYS and login != "bob"]
# Asked for, but no such row: a query that a key could widen would find one.
VANISHED = ["nobody' OR '1'='1", "' OR ''='", "x%", "zz\\", "%_%"]
