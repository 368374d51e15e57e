"""get_num_chips_available() as GroqFlow counts chips: PCI devices with Groq's vendor:device id."""

import os


def get_num_chips_available(pci_devices=None):
    if pci_devices is None:
        # The real helper runs `lspci -n`; a test machine has no GroqCard, so the test says
        # what lspci would print.
        pci_devices = os.environ.get("FAKE_GROQFLOW_LSPCI", "").split("\n")
    groq_card_id = "1de0:0000"
    return sum(1 for device in pci_devices if groq_card_id in device)
