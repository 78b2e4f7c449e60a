# Makes report.docx with python-docx (Debian's python3-docx):
#   /usr/bin/python3 gen/report_docx.py report.docx
import sys
from docx import Document

d = Document()
d.core_properties.author = "Subako tests"
d.add_heading("Quarterly Report", 0)
d.add_paragraph("Revenue grew in every region this quarter.")
d.add_heading("Highlights", level=1)
d.add_paragraph("New customers in Lisbon", style="List Bullet")
d.add_paragraph("Support tickets halved", style="List Bullet")
d.add_heading("Next steps", level=2)
d.add_paragraph("Hire two engineers", style="List Number")
d.add_paragraph("Open the Osaka office", style="List Number")
t = d.add_table(rows=3, cols=3)
for r, row in enumerate([("Region", "Q1", "Q2"), ("Europe", "120", "150"), ("Asia", "80", "110")]):
    for c, v in enumerate(row):
        t.cell(r, c).text = v
d.add_paragraph("Prices | in EUR.")
d.save(sys.argv[1])
