"""`{% load research_panels %}{% cxc_table5_panel label_set %}`: Crisscrossed Captions' Table 5 on a CxC label
set's page (the labels step's page; the panel is the research step's, annotator/research/views/cxc_table5.py)."""

from django import template

register = template.Library()


@register.inclusion_tag("research/labelsets/_cxc_table5.html", takes_context=True)
def cxc_table5_panel(context, label_set):
    from annotator.research.views.cxc_table5 import cxc_table5_panel_context

    return cxc_table5_panel_context(request=context["request"], label_set=label_set)
