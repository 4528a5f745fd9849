"""Entity-driven visual grounding: OCR and detector backends, objects, overlays."""
