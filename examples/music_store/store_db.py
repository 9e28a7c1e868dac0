"""Builds the example's music-store database: a small Chinook-shaped SQLite file, made on first use.

The tables and columns follow the Chinook sample schema the tutorial uses (Artist, Album, Track,
Customer, Invoice, InvoiceLine); the rows are a small hand-written subset so the example runs offline.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import uuid
from pathlib import Path

SCHEMA = """
CREATE TABLE Artist (ArtistId INTEGER PRIMARY KEY, Name TEXT NOT NULL);
CREATE TABLE Album (AlbumId INTEGER PRIMARY KEY, Title TEXT NOT NULL, ArtistId INTEGER NOT NULL REFERENCES Artist);
CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name TEXT NOT NULL, AlbumId INTEGER NOT NULL REFERENCES Album,
                    UnitPrice REAL NOT NULL DEFAULT 0.99);
CREATE TABLE Customer (CustomerId INTEGER PRIMARY KEY, FirstName TEXT NOT NULL, LastName TEXT NOT NULL, Phone TEXT);
CREATE TABLE Invoice (InvoiceId INTEGER PRIMARY KEY, CustomerId INTEGER NOT NULL REFERENCES Customer,
                      InvoiceDate TEXT NOT NULL, Total REAL NOT NULL);
CREATE TABLE InvoiceLine (InvoiceLineId INTEGER PRIMARY KEY, InvoiceId INTEGER NOT NULL REFERENCES Invoice,
                          TrackId INTEGER NOT NULL REFERENCES Track, UnitPrice REAL NOT NULL, Quantity INTEGER NOT NULL);
"""

ARTISTS = {1: "AC/DC", 22: "Led Zeppelin", 50: "Pink Floyd", 76: "James Brown", 90: "Prince", 110: "The Rolling Stones"}

ALBUMS = {
    1: ("For Those About To Rock We Salute You", 1),
    44: ("Led Zeppelin I", 22),
    130: ("Wish You Were Here", 50),
    131: ("The Dark Side Of The Moon", 50),
    180: ("Sex Machine", 76),
    190: ("Purple Rain", 90),
    200: ("Sticky Fingers", 110),
}

SEX_MACHINE = [
    "Please Please Please",
    "Think",
    "Night Train",
    "Out Of Sight",
    "Papa's Got A Brand New Bag Pt.1",
    "I Got You (I Feel Good)",
    "It's A Man's Man's Man's World",
    "Cold Sweat",
    "Say It Loud, I'm Black And I'm Proud Pt.1",
    "Get Up (I Feel Like Being A) Sex Machine",
    "Hey America",
    "Make It Funky Pt.1",
    "I'm A Greedy Man Pt.1",
    "Get On The Good Foot",
    "Get Up Offa That Thing",
    "It's Too Funky In Here",
    "Living In America",
    "I'm Real",
    "Hot Pants Pt.1",
    "Soul Power (Live)",
]

TRACKS: list[tuple[int, str, int]] = [
    (1, "For Those About To Rock (We Salute You)", 1),
    (2, "Put The Finger On You", 1),
    (501, "Good Times, Bad Times", 44),
    (502, "Babe I'm Gonna Leave You", 44),
    (503, "How Many More Times", 44),
    (504, "What Is And What Should Never Be", 44),
    (1601, "Shine On You Crazy Diamond", 130),
    (1602, "Wish You Were Here", 130),
    (1611, "Money", 131),
    (1612, "Time", 131),
    (2301, "Purple Rain", 190),
    (2302, "When Doves Cry", 190),
    (2401, "Brown Sugar", 200),
    (2402, "Wild Horses", 200),
    *[(2000 + i, name, 180) for i, name in enumerate(SEX_MACHINE)],
]

CUSTOMERS = [(32, "Aaron", "Mitchell", "+1 (204) 452-6452"), (15, "Jennifer", "Peterson", "+1 (604) 688-2255")]

INVOICES = [(50, 32, "2009-08-06 00:00:00", 1.98), (237, 15, "2011-10-02 00:00:00", 2.97)]

INVOICE_LINES = [
    (267, 50, 503, 0.99, 1),
    (268, 50, 504, 0.99, 1),
    (1280, 237, 1611, 0.99, 1),
    (1281, 237, 1612, 0.99, 1),
    (1282, 237, 2301, 0.99, 1),
]


def database_path() -> Path:
    """`MUSIC_STORE_DB` if set, else a file in the system temp folder."""
    return Path(os.environ.get("MUSIC_STORE_DB") or Path(tempfile.gettempdir()) / "evalward-music-store.db")


def ensure_database(path: Path | None = None) -> Path:
    """Create the database once; concurrent callers (threads too) each build a private file and rename it in."""
    path = path or database_path()
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f"{path.name}.{uuid.uuid4().hex}.tmp")
    conn = sqlite3.connect(scratch)
    try:
        conn.executescript(SCHEMA)
        conn.executemany("INSERT INTO Artist VALUES (?, ?)", ARTISTS.items())
        conn.executemany("INSERT INTO Album VALUES (?, ?, ?)", [(k, t, a) for k, (t, a) in ALBUMS.items()])
        conn.executemany("INSERT INTO Track (TrackId, Name, AlbumId) VALUES (?, ?, ?)", TRACKS)
        conn.executemany("INSERT INTO Customer VALUES (?, ?, ?, ?)", CUSTOMERS)
        conn.executemany("INSERT INTO Invoice VALUES (?, ?, ?, ?)", INVOICES)
        conn.executemany("INSERT INTO InvoiceLine VALUES (?, ?, ?, ?, ?)", INVOICE_LINES)
        conn.commit()
    finally:
        conn.close()
    os.replace(scratch, path)
    return path


def connect() -> sqlite3.Connection:
    return sqlite3.connect(ensure_database())
