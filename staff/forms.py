"""The People page's form: the username of a member to add, whose rules the account service
applies (accounts.services.user_add), as registration's."""

from django import forms


class MemberAddForm(forms.Form):
    username = forms.CharField(
        label="Username",
        max_length=150,
        widget=forms.TextInput(
            attrs={"autocomplete": "off", "autocapitalize": "none", "spellcheck": "false"}
        ),
        help_text="150 characters or fewer: letters, digits and @ . + - _ only.",
    )
