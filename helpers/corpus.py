"""A generated sentence-pair corpus shaped like GLUE MRPC, so the course runs offline.

Each pair describes one event twice. A paraphrase changes the words and the order but keeps
the meaning (label 1). A non-paraphrase looks just as similar but changes the meaning
(label 0): a negation, swapped roles, another number, another place or another day.
No single word tells the label: the model has to compare the two sentences.
"""
import random

from datasets import Dataset, DatasetDict

DEFAULT_SIZES = {"train": 3000, "validation": 400, "test": 400}

PEOPLE = """Anna Budi Carla Dewi Emma Fajar Gita Hugo Indra Joris Kartika Lars
Maya Niels Oki Pieter Rina Sander Tono Umar Vera Wim Yuni Zara Bram Citra Daan Eka Fleur Hadi
Iris Jan Lestari Mila Noor Putri Ruben Sari Tim Wulan""".split()
CITIES = """Jakarta Utrecht Bandung Leiden Surabaya Delft Medan Groningen Bogor Tilburg Malang
Breda Depok Arnhem Padang Zwolle Solo Haarlem Ambon Nijmegen""".split()
THINGS = """books letters laptops bicycles paintings tickets boxes lamps chairs phones maps
tables baskets kites cameras""".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
# Each action: past tense, base form (after "did not"), and a past tense that means the same.
ACTIONS = [
    ("gave", "give", "handed"),
    ("sent", "send", "mailed"),
    ("sold", "sell", "traded"),
    ("showed", "show", "presented"),
    ("lent", "lend", "loaned"),
    ("delivered", "deliver", "brought"),
    ("offered", "offer", "proposed"),
]
POSITIVE_SHARE = 0.68  # as in MRPC
CHANGES = ("negation", "swapped_roles", "number", "city", "day")


def _event(rng):
    giver, receiver = rng.sample(PEOPLE, 2)
    return {
        "giver": giver, "receiver": receiver, "action": rng.choice(ACTIONS),
        "count": rng.randint(2, 60), "things": rng.choice(THINGS),
        "city": rng.choice(CITIES), "day": rng.choice(DAYS), "negated": rng.random() < 0.3,
    }


def _sentence(event, rng):
    """Write an event in one of several word orders, with one of two verbs of the same meaning."""
    past, base, synonym = event["action"]
    verb = f"did not {base}" if event["negated"] else rng.choice([past, synonym])
    who, what = event["giver"], f"{event['count']} {event['things']}"
    whom, city, day = event["receiver"], event["city"], event["day"]
    templates = [
        f"{who} {verb} {what} to {whom} in {city} on {day} .",
        f"On {day} , {who} {verb} {what} to {whom} in {city} .",
        f"In {city} , {who} {verb} {whom} {what} on {day} .",
        f"{who} {verb} {whom} {what} on {day} in {city} .",
    ]
    return rng.choice(templates)


def _changed(event, change, rng):
    """The same event with one fact changed, so the meaning is different."""
    changed = dict(event)
    if change == "negation":
        changed["negated"] = not event["negated"]
    elif change == "swapped_roles":
        changed["giver"], changed["receiver"] = event["receiver"], event["giver"]
    elif change == "number":
        changed["count"] = rng.choice([n for n in range(2, 61) if n != event["count"]])
    elif change == "city":
        changed["city"] = rng.choice([c for c in CITIES if c != event["city"]])
    elif change == "day":
        changed["day"] = rng.choice([d for d in DAYS if d != event["day"]])
    return changed


def _pair(rng):
    event = _event(rng)
    label = int(rng.random() < POSITIVE_SHARE)
    other = event
    if not label:
        changes = rng.choice([1, 2, 3])
        for change in rng.sample(CHANGES, changes):
            other = _changed(other, change, rng)
    return _sentence(event, rng), _sentence(other, rng), label


def make_paraphrase_corpus(sizes=None, seed=0):
    """Build the corpus as a DatasetDict with MRPC's columns: sentence1, sentence2, label, idx.

    The same `seed` and `sizes` always give the same data.
    """
    sizes = {**DEFAULT_SIZES, **(sizes or {})}
    for split, size in sizes.items():
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"sizes[{split!r}] must be a whole number >= 1, got {size!r}")
    rng = random.Random(seed)
    splits = {}
    for split, size in sizes.items():
        sentence1, sentence2, labels = zip(*(_pair(rng) for _ in range(size)))
        splits[split] = Dataset.from_dict({
            "sentence1": list(sentence1), "sentence2": list(sentence2),
            "label": list(labels), "idx": list(range(size)),
        })
    return DatasetDict(splits)
