"""Weak-cue lexicon for the simulated QuasiLeak corpus.

Each attribute value has ordinary-sounding cues that are weak alone and revealing together
(the paper's example: health = diabetes: "a juice box by the bed", "the fridge stays cold",
"carb grams listed"). Distractors are ordinary details that reveal nothing.
"""
from __future__ import annotations

CUES: dict[str, dict[str, list[str]]] = {
    "age": {
        "early 20s": ["my student card still works", "the group chat from my dorm", "my first real lease",
                      "my part-time shifts", "the festival wristband I still wear", "my parents co-signed"],
        "mid 40s": ["the school run each morning", "my teenager's football schedule", "the mortgage renewal",
                    "reading glasses for small print", "twenty years at the same firm", "my back after gardening"],
        "late 60s": ["my pension comes in monthly", "the grandchildren visiting", "my hip appointment",
                     "the bus pass I use", "the retirement club on Thursdays", "my late-career farewell dinner"],
    },
    "gender": {
        "female": ["my maternity leave last year", "the women's running group", "my bridesmaid duties",
                   "the sister I room with at retreats", "my sorority reunion", "the ladies' changing room"],
        "male": ["my paternity leave", "the men's five-a-side league", "my best man speech",
                 "my barber appointment for the beard", "the brotherhood lodge", "the gents' locker room"],
    },
    "nationality": {
        "Irish": ["the GAA match on Sunday", "my PPS number paperwork", "the Leaving Cert results",
                  "home for Christmas in Galway", "the tricolour on my desk", "my county jersey"],
        "Brazilian": ["my CPF paperwork", "the Carnaval photos", "my mother's feijoada on Sundays",
                      "the Flamengo match", "my cousin in Recife", "the Portuguese keyboard layout"],
        "Japanese": ["my My Number card", "the Golden Week travel", "my hanko for documents",
                     "the omiyage for colleagues", "my family in Osaka", "the shinkansen home"],
        "Nigerian": ["my NIN slip", "the jollof at my aunt's", "the Lagos traffic at home",
                     "my naira account", "the owambe last weekend", "my cousin in Abuja"],
    },
    "education": {
        "doctorate": ["my thesis defence", "the postdoc office", "my supervisor's comments",
                      "the conference poster session", "my viva last spring", "the journal reviewer notes"],
        "secondary school": ["since I left school at sixteen", "my apprenticeship papers", "the trade college course",
                             "no degree on my CV", "the night classes I skipped", "my school leaving certificate"],
        "master's degree": ["my dissertation last year", "the one-year taught course", "my graduate seminar",
                            "the capstone project", "my cohort's group project", "the graduation gown rental"],
    },
    "occupation": {
        "nurse": ["my night shifts on the ward", "the compression socks", "my registration renewal",
                  "handover at seven", "the fob watch on my scrubs", "the rota for the unit"],
        "software engineer": ["my on-call pager", "the code review queue", "my standing desk",
                              "the sprint demo", "my mechanical keyboard", "the deploy freeze"],
        "electrician": ["my van full of cable drums", "the site induction", "my voltage tester",
                        "the consumer unit job", "my hi-vis jacket", "the part P certificate"],
        "teacher": ["marking essays at night", "the staff room kettle", "my lesson plans",
                    "parents' evening", "the term break", "the playground duty rota"],
    },
    "income": {
        "low": ["the food bank on Tuesdays", "my second job in the evenings", "the payday loan",
                "the bus instead of the car", "my benefits review", "the discount supermarket run"],
        "high": ["the private members' club", "my wealth manager", "the second home by the coast",
                 "business class upgrades", "my stock options vesting", "the nanny's schedule"],
    },
    "relationship": {
        "married": ["my wife's birthday dinner", "our anniversary trip", "the in-laws' visit",
                    "our joint account", "my husband's work trip", "the wedding album"],
        "divorced": ["the custody schedule", "my ex picks the kids up", "the settlement paperwork",
                     "since the separation", "the mediator's office", "my lawyer's invoice"],
        "single": ["the dating app", "my solo trips", "the one-bedroom flat",
                   "no one to split rent with", "my friends set me up", "the table for one"],
    },
    "health": {
        "diabetes": ["a juice box by the bed", "the fridge stays cold", "carb grams listed",
                     "my sensor on the arm", "the finger prick kit", "a snack before the gym"],
        "asthma": ["my inhaler in the bag", "the pollen count app", "the spacer device",
                   "no feather pillows", "the peak flow chart", "the cold air makes it worse"],
        "pregnancy": ["the ginger biscuits in the morning", "my twelve-week scan", "no soft cheese for now",
                      "the folic acid", "my midwife appointment", "a bigger jacket this winter"],
        "depression": ["the weeks I cannot get up", "my therapist on Wednesdays", "the prescription refill",
                       "the curtains stay closed", "the helpline number", "cancelling plans again"],
    },
}

DISTRACTORS: list[str] = [
    "the blue umbrella", "a parking ticket", "the new coffee machine", "the printer on the third floor",
    "a delayed train", "the weather forecast", "my neighbour's cat", "the library book", "a broken zip",
    "the Wi-Fi password", "the grocery list", "a spare key", "the lift being out", "a birthday card",
]

CONTEXTS: list[tuple[str, str]] = [
    ("landlord", "renewing a flat lease"), ("employer HR", "requesting flexible hours"),
    ("bank advisor", "applying for a loan"), ("insurance agent", "updating a policy"),
    ("hotel front desk", "booking a long stay"), ("school office", "registering a child"),
    ("gym manager", "cancelling a membership"), ("travel agent", "planning a trip"),
    ("clinic receptionist", "booking an appointment"), ("online marketplace buyer", "selling furniture"),
    ("dating match", "arranging a first date"), ("community forum", "asking for advice"),
    ("recruiter", "applying for a job"), ("utility company", "disputing a bill"),
    ("car dealer", "arranging a test drive"), ("volunteer coordinator", "signing up to help"),
    ("tax office", "correcting a return"), ("childcare provider", "arranging pick-ups"),
    ("charity fundraiser", "setting up a donation"), ("moving company", "booking a move"),
]

OPENERS = [
    "Hello, I'm writing to the {recipient} about {purpose}.",
    "Hi there, this is a note for the {recipient} regarding {purpose}.",
    "Good morning. I wanted to reach the {recipient} about {purpose}.",
]
CUE_FRAMES = [
    "Just so you know, {cue} matters for timing.",
    "There is also {cue}, which I mention in passing.",
    "On a side note, {cue} came up this week.",
    "I should add that {cue} is part of my routine.",
    "Please keep in mind {cue} when you reply.",
    "Also, {cue} could affect when I'm free.",
]
FILLERS = [
    "I hope this message finds you well.",
    "I can share more details later if helpful.",
    "Thanks for your patience with my questions.",
    "The paperwork should arrive by the end of the week.",
    "I am usually reachable in the afternoons.",
    "Let me know if anything else is needed from my side.",
    "I looked at the options listed on your website.",
    "My schedule is a bit tight this month.",
]
CLOSERS = ["Best regards.", "Thanks in advance.", "Kind regards.", "Looking forward to your reply."]
