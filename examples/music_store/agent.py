"""The music-store support agent from the evaluation tutorial, rebuilt without a model so it runs offline.

Shape (as in the tutorial): an intent router sends the user either to the refund agent (gather_info →
lookup | refund) or to the question-answering agent (a ReAct loop over lookup_track / lookup_album /
lookup_artist), then `compile_followup` sets the reply. Each node and tool is reported through
`evalward.trace`, so the recorded trajectory matches the tutorial's (node names plus tool names).

Entry points for evalward:
- `run_graph(request)`: the end-to-end agent (refunds only pretend to delete: test mode, as the tutorial's
  `config={"env": "test"}`);
- `classify_intent(request)`: the router alone, for single-step evaluation (`{"route": ...}`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from evalward import trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store_db import connect

REFUND_WORDS = ("refund", "money back", "退款")
DISLIKE_WORDS = ("don't like", "do not like", "hate", "return")


def _last_user_message(request: dict[str, Any]) -> str:
    messages = request.get("inputs", {}).get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return str(message.get("content", ""))
    return str(request.get("query", ""))


def route(text: str) -> str:
    """The intent router: refund requests go to the refund agent, everything else to question answering."""
    lowered = text.lower()
    wants_refund = any(w in lowered for w in REFUND_WORDS) or (
        "bought" in lowered and any(w in lowered for w in DISLIKE_WORDS)
    )
    return "refund_agent" if wants_refund else "question_answering_agent"


def classify_intent(request: dict[str, Any]) -> dict[str, Any]:
    """Single-step target: only the router's decision."""
    return {"route": route(_last_user_message(request))}


# --- refund agent -------------------------------------------------------------------------------------------


def _refund(invoice_id: int | None, invoice_line_ids: list[int] | None, *, mock: bool) -> float:
    """Total refunded for an invoice and/or invoice lines; rows are deleted only when not mocked."""
    total = 0.0
    with connect() as conn:
        if invoice_id is not None:
            row = conn.execute("SELECT Total FROM Invoice WHERE InvoiceId = ?", (invoice_id,)).fetchone()
            total += row[0] if row else 0.0
            if not mock:
                conn.execute("DELETE FROM InvoiceLine WHERE InvoiceId = ?", (invoice_id,))
                conn.execute("DELETE FROM Invoice WHERE InvoiceId = ?", (invoice_id,))
        if invoice_line_ids:
            marks = ",".join("?" for _ in invoice_line_ids)
            row = conn.execute(
                f"SELECT SUM(UnitPrice * Quantity) FROM InvoiceLine WHERE InvoiceLineId IN ({marks})", invoice_line_ids
            ).fetchone()
            total += row[0] or 0.0
            if not mock:
                conn.execute(f"DELETE FROM InvoiceLine WHERE InvoiceLineId IN ({marks})", invoice_line_ids)
    return round(total, 2)


def _lookup(first: str, last: str, phone: str, artist: str | None) -> list[dict[str, Any]]:
    query = """
        SELECT il.InvoiceLineId, t.Name, art.Name, i.InvoiceDate, il.Quantity, il.UnitPrice
        FROM InvoiceLine il JOIN Invoice i ON il.InvoiceId = i.InvoiceId
        JOIN Customer c ON i.CustomerId = c.CustomerId JOIN Track t ON il.TrackId = t.TrackId
        JOIN Album alb ON t.AlbumId = alb.AlbumId JOIN Artist art ON alb.ArtistId = art.ArtistId
        WHERE c.FirstName = ? AND c.LastName = ? AND c.Phone = ?"""
    params: list[Any] = [first, last, phone]
    if artist:
        query += " AND art.Name = ?"
        params.append(artist)
    with connect() as conn:
        rows = conn.execute(query + " ORDER BY il.InvoiceLineId", params).fetchall()
    keys = ("invoice_line_id", "track_name", "artist_name", "purchase_date", "quantity_purchased", "price_per_unit")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _known_artist(text: str) -> str | None:
    with connect() as conn:
        names = [r[0] for r in conn.execute("SELECT Name FROM Artist")]
    lowered = text.lower()
    return next((n for n in names if n.lower() in lowered), None)


def refund_agent(text: str, *, mock: bool) -> str:
    trace.agent_call("refund_agent")
    trace.step("refund_agent")
    trace.step("gather_info")
    invoice = re.search(r"(?:invoice|发票)\s*#?\s*(\d+)", text, re.IGNORECASE)
    name = re.search(r"(?i:my name is) ([A-Z][a-z]+) ([A-Z][a-z]+)", text)
    phone = re.search(r"\+\d[\d ()-]{6,}\d", text)
    if invoice:
        trace.step("refund")
        invoice_id = int(invoice.group(1))
        amount = _refund(invoice_id, None, mock=mock)
        trace.tool_call("refund", {"invoice_id": invoice_id}, agent="refund_agent", result=amount)
        return f"You have been refunded a total of ${amount:.2f}. Is there anything else I can help you with?"
    if name and phone:
        trace.step("lookup")
        artist = _known_artist(text)
        args = {"first_name": name.group(1), "last_name": name.group(2), "phone": phone.group(0), "artist": artist}
        purchases = _lookup(name.group(1), name.group(2), phone.group(0), artist)
        trace.tool_call("lookup", args, agent="refund_agent", result=purchases)
        if not purchases:
            return "We could not find any purchases matching what you told us. Is everything spelled correctly?"
        lines = "\n".join(
            f"{p['invoice_line_id']}  {p['track_name']}  {p['artist_name']}  {p['purchase_date']}" for p in purchases
        )
        return f"Which of the following purchases would you like refunded?\n\n{lines}"
    return (
        "I need more information to help you with the refund. Please provide your phone number, "
        "invoice ID, or the line item IDs of the purchase you would like refunded."
    )


# --- question-answering agent -------------------------------------------------------------------------------


def lookup_track(artist_name: str | None = None, album_title: str | None = None) -> list[dict[str, str]]:
    sql = """SELECT t.Name, ar.Name, al.Title FROM Track t JOIN Album al ON t.AlbumId = al.AlbumId
             JOIN Artist ar ON al.ArtistId = ar.ArtistId WHERE 1=1"""
    params: list[str] = []
    if artist_name:
        sql += " AND ar.Name LIKE ?"
        params.append(f"%{artist_name}%")
    if album_title:
        sql += " AND al.Title LIKE ?"
        params.append(f"%{album_title}%")
    with connect() as conn:
        return [{"track_name": r[0], "artist_name": r[1], "album_name": r[2]} for r in conn.execute(sql, params)]


def lookup_album(artist_name: str | None = None, album_title: str | None = None) -> list[dict[str, str]]:
    sql = "SELECT al.Title, ar.Name FROM Album al JOIN Artist ar ON al.ArtistId = ar.ArtistId WHERE 1=1"
    params: list[str] = []
    if artist_name:
        sql += " AND ar.Name LIKE ?"
        params.append(f"%{artist_name}%")
    if album_title:
        sql += " AND al.Title LIKE ?"
        params.append(f"%{album_title}%")
    with connect() as conn:
        return [{"album_name": r[0], "artist_name": r[1]} for r in conn.execute(sql + " ORDER BY al.AlbumId", params)]


def _call_tool(name: str, args: dict[str, Any]) -> Any:
    """The ReAct loop's `tools` node: run one tool and record it."""
    trace.step("tools")
    trace.step(name)
    result = {"lookup_track": lookup_track, "lookup_album": lookup_album}[name](**args)
    trace.tool_call(name, args, agent="question_answering_agent", result=result)
    return result


def question_answering_agent(text: str) -> str:
    trace.agent_call("question_answering_agent")
    trace.step("question_answering_agent")
    trace.step("agent")
    lowered = text.lower()
    if "who recorded" in lowered:
        title = re.search(r"who recorded (.+?)\?", text, re.IGNORECASE)
        album = title.group(1).strip() if title else ""
        found = _call_tool("lookup_album", {"album_title": album})
        trace.step("agent")
        if not found:
            return f"I could not find an album called {album}."
        artist = found[0]["artist_name"]
        others = [
            a["album_name"] for a in lookup_album(artist_name=artist) if a["album_name"] != found[0]["album_name"]
        ]
        more = f" We also have: {', '.join(others)}." if others else ""
        return f"{found[0]['album_name']} is an album by {artist}.{more}"
    artist = _known_artist(text)
    if artist:
        tracks = _call_tool("lookup_track", {"artist_name": artist})
        trace.step("agent")
        albums = sorted({t["album_name"] for t in tracks})
        return f"We have {len(tracks)} songs by {artist}, from the album{'s' if len(albums) > 1 else ''} {', '.join(albums)}."
    return "I can help you find tracks, albums and artists in our store. What are you looking for?"


def run_graph(request: dict[str, Any]) -> dict[str, Any]:
    """End-to-end target: route, run the chosen sub-agent in test mode, compile the follow-up."""
    text = _last_user_message(request)
    trace.step("intent_classifier")
    followup = refund_agent(text, mock=True) if route(text) == "refund_agent" else question_answering_agent(text)
    trace.step("compile_followup")
    return {"response": followup}
