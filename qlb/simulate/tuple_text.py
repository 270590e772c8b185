"""Public request and case-context templates per domain and class, and diagnostic notes per
mechanism, for the simulated TUPLE worlds. Public text is shared within a pair; only the
private diagnostic note names the mechanism's evidence."""
from __future__ import annotations

REQUESTS: dict[str, dict[str, list[str]]] = {
    "delivery": {
        "ADDRESS": [
            "Merchant reports parcel {ref} was returned as undeliverable to {city}; please advise the next step.",
            "Customer says order {ref} never arrived at the {city} address they gave; route this claim.",
            "Driver could not complete stop for {ref} in {city}; merchant asks how to resolve it.",
        ],
        "DAMAGE": [
            "Customer in {city} received order {ref} with the contents broken; merchant asks where to file.",
            "Parcel {ref} arrived in {city} with a torn box and a damaged item; please route.",
            "Merchant forwarded photos of order {ref} showing a dented carton on arrival in {city}.",
        ],
        "DELAY": [
            "Order {ref} to {city} is {days} days past its promised date; merchant wants it chased.",
            "Tracking for {ref} has not moved for {days} days on the way to {city}; please route.",
            "Customer in {city} is still waiting for {ref}, now {days} days late.",
        ],
        "DELIVERY_RECORD": [
            "Tracking shows {ref} delivered in {city}, but the customer says nothing arrived.",
            "Merchant disputes the delivery record of {ref}: the customer in {city} found no parcel.",
            "Order {ref} is marked delivered to {city}; the recipient asks for proof.",
        ],
    },
    "equipment": {
        "LINK": [
            "Unit {ref} at the {site} site keeps dropping off the controller; please dispatch.",
            "Operator at {site} reports {ref} losing its connection every few hours.",
            "Remote monitoring lost contact with {ref} at {site} {days} times this week.",
        ],
        "MECHANICAL": [
            "Unit {ref} at {site} makes a grinding noise under load; operator requests service.",
            "Operator at {site} reports vibration and slowing output on {ref}.",
            "{ref} at the {site} plant runs hot and loud after {days} hours of operation.",
        ],
        "POWER": [
            "Unit {ref} at {site} shuts down without warning; operator requests a visit.",
            "{ref} at the {site} site reboots during start-up on some mornings.",
            "Operator at {site} says {ref} loses power {days} times per shift.",
        ],
        "SENSOR": [
            "Readings from {ref} at {site} disagree with the handheld meter; please check.",
            "{ref} at the {site} plant reports values that jump between shifts.",
            "Operator at {site} sees {ref} flag alarms that the line does not confirm.",
        ],
    },
    "it": {
        "APPLICATION": [
            "Users of the {app} service report errors since {day}; please route ticket {ref}.",
            "The {app} application has become slow and times out for the {team} team.",
            "Ticket {ref}: {app} crashes for several users in {team} since {day}.",
        ],
        "IDENTITY": [
            "Several {team} users cannot sign in to {app} since {day}; ticket {ref}.",
            "Ticket {ref}: a {team} user is repeatedly asked to authenticate in {app}.",
            "New joiners in {team} cannot access {app}; please route ticket {ref}.",
        ],
        "NETWORK": [
            "The {team} office cannot reach {app} intermittently since {day}; ticket {ref}.",
            "Ticket {ref}: connections from {team} to {app} drop every few minutes.",
            "Remote staff in {team} report {app} unreachable from some locations.",
        ],
        "STORAGE": [
            "Ticket {ref}: {app} fails to save files for the {team} team since {day}.",
            "Writes to the {app} share fail intermittently for {team}; please route.",
            "The {team} backup job for {app} has failed {days} nights in a row; ticket {ref}.",
        ],
    },
}

CONTEXTS: dict[str, list[str]] = {
    "delivery": [
        "Account tier {tier}; {n} similar claims this quarter; shipment service {service}.",
        "Merchant on the {tier} plan; parcel weight {weight} kg; service level {service}.",
        "Claim opened by the merchant's support desk; {n} prior contacts on this order; {service} service.",
    ],
    "equipment": [
        "Asset under {tier} contract; last preventive visit {n} weeks ago; model line {service}.",
        "Installed base of {n} similar units at the site; {tier} coverage; line {service}.",
        "Service history shows {n} visits this year; contract {tier}; unit family {service}.",
    ],
    "it": [
        "Priority {tier}; {n} users affected; service owner {service}.",
        "Reported through the {tier} queue; about {n} users; owning team {service}.",
        "Business impact rated {tier}; {n} related tickets this month; owner {service}.",
    ],
}

SLOTS: dict[str, list[str]] = {
    "city": ["Leeds", "Lyon", "Porto", "Graz", "Tampere", "Utrecht", "Brno", "Cork", "Malmo", "Turin"],
    "site": ["north", "harbour", "east ridge", "valley", "airport", "riverside", "central", "south yard"],
    "app": ["payroll", "intranet", "ticketing", "CRM", "build server", "file share", "wiki", "reporting"],
    "team": ["finance", "sales", "support", "engineering", "legal", "warehouse", "marketing", "HR"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend", "yesterday"],
    "tier": ["standard", "premium", "basic", "gold", "P2", "P3", "enterprise"],
    "service": ["express", "economy", "two-day", "LX-200", "K-series", "platform", "data", "ops"],
}

# One line of private evidence per mechanism: model-visible only, never released.
DIAGNOSTIC_NOTES: dict[str, str] = {
    "geocode_mismatch": "Geocoder placed the pin {n} km from the street address on the label.",
    "incomplete_unit_number": "Label lacks the apartment number; building has {n} units.",
    "label_transposition": "Two digits of the postcode on the label are swapped relative to the order.",
    "recipient_relocated": "Postal forwarding record shows the recipient moved {n} weeks ago.",
    "crush_in_transit": "Load plan shows the parcel under {n} heavier items in the trailer.",
    "forklift_puncture": "Hub camera shows a forklift tine contact at dock {n}.",
    "inadequate_packaging": "Item shipped without inner padding; box rated below item weight.",
    "moisture_exposure": "Trailer {n} reported a roof leak during the route.",
    "missed_transfer": "Linehaul scan shows the parcel missed the connecting trailer at hub {n}.",
    "sorting_backlog": "Hub {n} sorter ran at {n}0% over capacity for two shifts.",
    "vehicle_breakdown": "Delivery van {n} logged an engine fault mid-route.",
    "weather_hold": "Regional weather hold issued for {n} hours on the route.",
    "premature_delivered_scan": "Delivered scan was recorded {n} km before the stop location.",
    "proof_photo_missing": "Driver app shows the proof photo step skipped.",
    "scanner_sync_failure": "Handheld {n} synced a batch of scans hours late.",
    "wrong_stop_scan": "Delivered scan geotag matches the neighbouring stop.",
    "cable_wear": "Technician found abrasion on the harness near joint {n}.",
    "connector_corrosion": "Green oxidation on connector pins of port {n}.",
    "firmware_handshake_fault": "Controller log shows handshake version mismatch after update {n}.",
    "radio_interference": "Spectrum scan shows a strong emitter on channel {n}.",
    "belt_slippage": "Belt tension measured {n}0% below specification.",
    "bearing_wear": "Vibration spectrum shows a bearing defect frequency peak.",
    "lubrication_failure": "Grease reservoir found empty; last refill {n} months ago.",
    "shaft_misalignment": "Laser alignment shows {n} mm offset at the coupling.",
    "battery_degradation": "Backup battery holds {n}0% of rated capacity.",
    "capacitor_aging": "Bulging capacitor on supply board revision {n}.",
    "fuse_fatigue": "Fuse F{n} shows discoloration from repeated near-trip cycles.",
    "voltage_sag": "Supply logger recorded dips to {n}0% of nominal at start-up.",
    "calibration_drift": "Reference check shows a {n}% offset since last calibration.",
    "contamination_fouling": "Probe tip coated with residue; cleaning restores readings.",
    "thermal_saturation": "Sensor housing measured above its rated temperature by {n} degrees.",
    "wiring_intermittent": "Readings drop out when cable {n} is flexed.",
    "config_regression": "Deployment {n} changed a default setting in the service configuration.",
    "dependency_timeout": "Upstream dependency latency exceeded {n} seconds in traces.",
    "memory_leak": "Heap grows steadily to the limit within {n} hours of restart.",
    "thread_deadlock": "Thread dump shows two workers waiting on each other's locks.",
    "group_sync_lag": "Directory group sync is {n} hours behind the HR feed.",
    "mfa_enrollment_gap": "Affected users have no second factor enrolled.",
    "password_lockout": "Account lockout counter reached {n} failed attempts.",
    "token_expiry": "Session tokens expire after {n} minutes instead of the policy value.",
    "bgp_flap": "Edge router logged {n} BGP session resets.",
    "dns_misroute": "Resolver returns a stale record for the service name.",
    "firewall_rule_drift": "Rule {n} was altered outside change control.",
    "mtu_mismatch": "Packets above {n}00 bytes are dropped on the tunnel.",
    "disk_quota_exhaustion": "Volume quota at 100% for the service account.",
    "inode_exhaustion": "Filesystem has free space but no free inodes.",
    "replication_lag": "Replica is {n} minutes behind the primary.",
    "snapshot_lock": "A stuck snapshot job holds a lock on the volume.",
}
